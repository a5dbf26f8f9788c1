package server

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions v0-v3: advertises exactly the dispatch table; v3 flexible
// body, but the response header stays v0 (see frame).
func init() { register(kmsg.ApiVersions, 0, 3, handleApiVersions) }

func handleApiVersions(_ *Server, r *request) (kmsg.Response, error) {
	return apiVersionsResponse(r.kreq.GetVersion()), nil
}

func apiVersionsResponse(version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	keys := make([]int, 0, len(handlers))
	for k := range handlers {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	for _, k := range keys {
		h := handlers[int16(k)]
		v := kmsg.NewApiVersionsResponseApiKey()
		v.ApiKey, v.MinVersion, v.MaxVersion = int16(k), h.min, h.max
		resp.ApiKeys = append(resp.ApiKeys, v)
	}
	return resp
}
