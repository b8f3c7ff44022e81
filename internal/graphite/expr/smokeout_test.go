package expr

import (
	"flag"
	"os"
	"testing"
)

var smokeOutFile = flag.String("smoke-out", "", "write the smoke targets to this file")

func TestMain(m *testing.M) {
	flag.Parse()
	if *smokeOutFile != "" {
		f, err := os.Create(*smokeOutFile)
		if err != nil {
			panic(err)
		}
		smokeOut = f
		code := m.Run()
		f.Close()
		os.Exit(code)
	}
	os.Exit(m.Run())
}
