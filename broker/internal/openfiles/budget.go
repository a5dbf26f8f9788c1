package openfiles

import (
	"math"
	"os"
	"syscall"
)

// PerReplica is what a partition replica with one segment keeps open: its
// checkpoint, its segment and its frame file. Rolled segments keep theirs
// open too, which the reserve absorbs.
const PerReplica = 3

// Budget is a process's open-file limit.
type Budget struct{ Limit int }

// Current is this process's budget.
func Current() Budget {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > math.MaxInt32 {
		return Budget{Limit: math.MaxInt32}
	}
	return Budget{Limit: int(rl.Cur)}
}

// Reserve is what the budget keeps for all but replicas: client and peer
// connections, the Raft log store's files, and segments rolled since a
// replica started.
func (b Budget) Reserve() int { return max(256, b.Limit/10) }

// MaxReplicas is how many replicas the limit has room for, at least 1:
// 0 would read as no limit recorded (meta.Broker.MaxReplicas).
func (b Budget) MaxReplicas() int32 {
	return int32(min(math.MaxInt32, max(1, (b.Limit-b.Reserve())/PerReplica)))
}

// RoomForReplica reports whether, with open files open, one more replica
// leaves at least half the reserve free: replicas placed before a lower
// limit wait rather than take the files connections and rolls need.
func (b Budget) RoomForReplica(open int) bool {
	return open+PerReplica+b.Reserve()/2 <= b.Limit
}

// Open counts this process's open files.
func Open() (int, error) {
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	for {
		names, err := f.Readdirnames(4096)
		n += len(names)
		if err != nil || len(names) == 0 {
			// The directory's own descriptor is among them.
			return n - 1, nil
		}
	}
}
