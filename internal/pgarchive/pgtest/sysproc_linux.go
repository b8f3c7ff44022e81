package pgtest

import "syscall"

// sysProcAttr runs postgres as cred, and has the kernel send it SIGQUIT
// (immediate shutdown) if the test process dies first.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
}
