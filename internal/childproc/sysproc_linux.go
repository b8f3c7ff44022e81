package childproc

import "syscall"

// sysProcAttr makes the kernel kill a child when the test binary dies
// without running its cleanups (a panic, go test's -timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
