package security

import (
	"reflect"
	"testing"
)

func TestParseListeners(t *testing.T) {
	for _, tc := range []struct {
		name                             string
		listeners, advertised, protocols string
		want                             []Listener
		wantErr                          bool
	}{
		{name: "protocol names are listener names", listeners: "PLAINTEXT://:9092,SASL_PLAINTEXT://0.0.0.0:9094",
			want: []Listener{{"PLAINTEXT", ":9092", ":9092", Plaintext}, {"SASL_PLAINTEXT", "0.0.0.0:9094", "0.0.0.0:9094", SASLPlaintext}}},
		{name: "named listeners, one advertised", listeners: "internal://0.0.0.0:9092,EXTERNAL://0.0.0.0:9094",
			advertised: "EXTERNAL://kafka.example.com:31094", protocols: "INTERNAL:PLAINTEXT,EXTERNAL:sasl_plaintext",
			want: []Listener{{"INTERNAL", "0.0.0.0:9092", "0.0.0.0:9092", Plaintext}, {"EXTERNAL", "0.0.0.0:9094", "kafka.example.com:31094", SASLPlaintext}}},
		{name: "no protocol for a listener", listeners: "CLIENT://:9092", wantErr: true},
		{name: "unknown protocol", listeners: "A://:9092", protocols: "A:KERBEROS", wantErr: true},
		{name: "TLS", listeners: "SSL://:9093", want: []Listener{{"SSL", ":9093", ":9093", SSL}}},
		{name: "listener named twice", listeners: "PLAINTEXT://:9092,PLAINTEXT://:9093", wantErr: true},
		{name: "advertised listener that is not one", listeners: "PLAINTEXT://:9092", advertised: "OTHER://h:1", wantErr: true},
		{name: "no port", listeners: "PLAINTEXT://host", wantErr: true},
		{name: "no name", listeners: "://:9092", wantErr: true},
		{name: "none", listeners: " , ", wantErr: true},
	} {
		got, err := ParseListeners(tc.listeners, tc.advertised, tc.protocols)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: error %v, want error %v", tc.name, err, tc.wantErr)
			continue
		}
		if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
