package s3test

import "syscall"

// sysProcAttr makes the kernel kill versitygw if the test binary dies
// before its cleanup runs, so no server outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
