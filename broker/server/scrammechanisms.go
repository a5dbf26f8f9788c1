package server

import "github.com/raftka/raftka/broker/meta"

// scramMechanismNumber and scramMechanismName map Kafka's numbers of the
// SCRAM mechanisms (ScramMechanism: 1 and 2) to their names.
func scramMechanismNumber(name string) int8 {
	switch name {
	case meta.ScramSHA256:
		return 1
	case meta.ScramSHA512:
		return 2
	}
	return 0
}

func scramMechanismName(n int8) (string, bool) {
	switch n {
	case 1:
		return meta.ScramSHA256, true
	case 2:
		return meta.ScramSHA512, true
	}
	return "", false
}
