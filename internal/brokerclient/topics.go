package brokerclient

import "github.com/twmb/franz-go/pkg/kadm"

// UserTopics are the topics of a Metadata answer without the internal
// ones. __consumer_offsets lives in the brokers' metadata group: its
// "replicas" are the metadata voters, so placement, rebalancing, scale-in
// and health count it nowhere.
func UserTopics(topics kadm.TopicDetails) kadm.TopicDetails {
	out := make(kadm.TopicDetails, len(topics))
	for name, t := range topics {
		if !t.IsInternal {
			out[name] = t
		}
	}
	return out
}
