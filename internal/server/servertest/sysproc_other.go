//go:build !linux

package servertest

import "syscall"

// childSysProcAttr: outside Linux there is no Pdeathsig; children outlive a
// test binary that dies without running its cleanups.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
