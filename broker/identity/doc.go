// Package identity owns a broker's data-directory identity: the file that
// says which cluster the directory belongs to, which broker id it serves,
// and which incarnation of that broker wrote it.
//
// A broker that starts on a directory without it (a lost disk, a new
// volume) is a new incarnation: it must not vote or acknowledge as the
// Raft replicas its broker id had, since it does not hold what they
// promised to keep. The metadata group numbers incarnations (generations),
// and the generation is part of every Raft node id the broker uses.
package identity
