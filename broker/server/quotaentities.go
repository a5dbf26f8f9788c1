package server

import "github.com/raftka/raftka/broker/quota"

func knownEntityType(t string) bool { return t == quota.EntityUser || t == quota.EntityClientID }
