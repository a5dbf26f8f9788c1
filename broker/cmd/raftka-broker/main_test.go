package main

import (
	"strconv"
	"testing"
)

func TestAdvertisedListenersByID(t *testing.T) {
	byID := "0=EXTERNAL://10.0.0.5:31000; 1=EXTERNAL://10.0.0.6:31001,TLS://lb.example.com:9094"
	for id, want := range map[int]string{
		0: "REPLICATION://b-0.svc:9091,TLS://b-0.svc:9094,EXTERNAL://10.0.0.5:31000",
		1: "REPLICATION://b-1.svc:9091,EXTERNAL://10.0.0.6:31001,TLS://lb.example.com:9094",
		2: "REPLICATION://b-2.svc:9091,TLS://b-2.svc:9094,EXTERNAL://b-2.svc:9095",
	} {
		base := "REPLICATION://b-" + strconv.Itoa(id) + ".svc:9091,TLS://b-" + strconv.Itoa(id) + ".svc:9094,EXTERNAL://b-" + strconv.Itoa(id) + ".svc:9095"
		mine, err := advertisedByID(byID, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := replaceAdvertised(base, mine); got != want {
			t.Errorf("broker %d: %s, want %s", id, got, want)
		}
	}
	if _, err := advertisedByID("x=EXTERNAL://h:1", 0); err == nil {
		t.Error("a malformed id was taken")
	}
}
