// Command pause is the sandbox ("pause") container of the end-to-end test
// cluster (hack/e2e-cluster.sh): it holds a pod's namespaces, reaps orphaned
// children when it is the pod's PID 1, and exits on SIGINT or SIGTERM. The
// test cluster pulls no images, so this one is built from source like the rest.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
