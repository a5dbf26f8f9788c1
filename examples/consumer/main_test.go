package main

import (
	"reflect"
	"testing"

	"github.com/raftka/raftka/internal/clientsecurity"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    config
		wantErr bool
	}{
		{
			name: "all set",
			env:  map[string]string{"BOOTSTRAP_SERVERS": "a:9092, b:9092", "GROUP_ID": "g", "TOPIC": "t1,t2", "RECORDS_PER_SECOND": "20"},
			want: config{brokers: []string{"a:9092", "b:9092"}, group: "g", topics: []string{"t1", "t2"}, recordsPerSecond: 20},
		},
		{
			name: "a pipeline with an output topic",
			env:  map[string]string{"BOOTSTRAP_SERVERS": "a:9092", "GROUP_ID": "g", "TOPIC": "t", "OUTPUT_TOPIC": " t-out "},
			want: config{brokers: []string{"a:9092"}, group: "g", topics: []string{"t"}, outputTopic: "t-out"},
		},
		{
			name: "rate defaults to unbounded",
			env:  map[string]string{"BOOTSTRAP_SERVERS": "a:9092", "GROUP_ID": "g", "TOPIC": "t"},
			want: config{brokers: []string{"a:9092"}, group: "g", topics: []string{"t"}},
		},
		{
			name: "SCRAM over TLS",
			env: map[string]string{"BOOTSTRAP_SERVERS": "a:9094", "GROUP_ID": "g", "TOPIC": "t", "SECURITY_PROTOCOL": "SASL_SSL",
				"SASL_USERNAME": "orders-app", "SASL_PASSWORD": "pw"},
			want: config{brokers: []string{"a:9094"}, group: "g", topics: []string{"t"},
				security: clientsecurity.Settings{Protocol: "SASL_SSL", Username: "orders-app", Password: "pw"}},
		},
		{name: "SASL without a user", env: map[string]string{"BOOTSTRAP_SERVERS": "a:9092", "GROUP_ID": "g", "TOPIC": "t", "SECURITY_PROTOCOL": "SASL_SSL"}, wantErr: true},
		{name: "unknown protocol", env: map[string]string{"BOOTSTRAP_SERVERS": "a:9092", "GROUP_ID": "g", "TOPIC": "t", "SECURITY_PROTOCOL": "TLS"}, wantErr: true},
		{name: "CA file missing", env: map[string]string{"BOOTSTRAP_SERVERS": "a:9092", "GROUP_ID": "g", "TOPIC": "t", "SSL_CA_FILE": "/nonexistent/ca.crt"}, wantErr: true},
		{name: "missing topic", env: map[string]string{"BOOTSTRAP_SERVERS": "a:9092", "GROUP_ID": "g"}, wantErr: true},
		{name: "negative rate", env: map[string]string{"BOOTSTRAP_SERVERS": "a:9092", "GROUP_ID": "g", "TOPIC": "t", "RECORDS_PER_SECOND": "-1"}, wantErr: true},
		{name: "rate not a number", env: map[string]string{"BOOTSTRAP_SERVERS": "a:9092", "GROUP_ID": "g", "TOPIC": "t", "RECORDS_PER_SECOND": "fast"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := configFromEnv(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
