package servertest

import "syscall"

// childSysProcAttr makes the kernel kill a child when the test binary dies
// without running its cleanups (a panic, go test's -timeout).
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
