//go:build !linux

package childproc

import "syscall"

// sysProcAttr: outside Linux there is no Pdeathsig; children outlive a
// test binary that dies without running its cleanups.
func sysProcAttr() *syscall.SysProcAttr { return nil }
