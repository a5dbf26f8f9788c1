// Package controllers reconciles the raftka.io kinds: one controller per
// kind, each a thin Reconcile running small named steps, with status derived
// from the world and written only when it changed. Desired objects come
// from package specs; decisions from package rollout.
package controllers
