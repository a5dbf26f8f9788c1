// Package packaging tests how users install Raftka: the kustomize
// configuration and the Helm chart, applied to a real kube-apiserver
// (envtest) with the real kubectl and helm binaries.
package packaging
