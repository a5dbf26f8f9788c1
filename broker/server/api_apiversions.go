package server

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions v0-v3: advertises exactly the dispatch table; v3 flexible
// body, but the response header stays v0 (see frame), and the features:
// transaction.version, which tells clients that KIP-890 part 2 is on.
func init() { register(kmsg.ApiVersions, 0, 3, handleApiVersions) }

func handleApiVersions(srv *Server, r *request) (kmsg.Response, error) {
	resp := apiVersionsResponse(r.kreq.GetVersion())
	if resp.Version >= 3 {
		supported := kmsg.NewApiVersionsResponseSupportedFeature()
		supported.Name, supported.MinVersion, supported.MaxVersion = transactionVersionFeature, 0, 2
		resp.SupportedFeatures = append(resp.SupportedFeatures, supported)
		// Finalized once every broker serves it, as Kafka finalizes a
		// feature level for the whole cluster; the level is the epoch, so
		// a client comparing brokers takes the upgraded one's.
		level := srv.transactionVersion()
		resp.FinalizedFeaturesEpoch = int64(level)
		finalized := kmsg.NewApiVersionsResponseFinalizedFeature()
		finalized.Name, finalized.MinVersionLevel, finalized.MaxVersionLevel = transactionVersionFeature, level, level
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, finalized)
	}
	return resp, nil
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
