package carbon_test

import (
	"fmt"

	"github.com/aerie-db/aerie/internal/carbon"
)

func ExampleParseLine() {
	s, err := carbon.ParseLine([]byte("servers.web1.cpu;env=prod;dc=eu 12.5 1700000000"), 0, carbon.Limits{})
	fmt.Println(s.Path, s.T, s.V, err)
	fmt.Println(carbon.Labels(s.Path))
	_, err = carbon.ParseLine([]byte("servers.web1.cpu twelve 1700000000"), 0, carbon.Limits{})
	fmt.Println(err)
	// Output:
	// servers.web1.cpu;dc=eu;env=prod 1700000000000 12.5 <nil>
	// {__name__="servers.web1.cpu", dc="eu", env="prod"}
	// value at byte 17: "twelve" is not a number
}

func ExampleDecodePickle() {
	payload := carbon.AppendPickle(nil, []carbon.PickleEntry{{Path: []byte("a.b"), T: 1700000000, V: 1.5}})
	err := carbon.DecodePickle(payload, func(e carbon.PickleEntry) {
		fmt.Printf("%s %.0f %g\n", e.Path, e.T, e.V)
	}, nil)
	fmt.Println(err)
	// GLOBAL os.system, REDUCE: refused before anything runs.
	err = carbon.DecodePickle([]byte("cos\nsystem\n(S'id'\ntR."), func(carbon.PickleEntry) {}, nil)
	fmt.Println(err)
	// Output:
	// a.b 1700000000 1.5
	// <nil>
	// pickle opcode 'c' (GLOBAL) at byte 0: refused: only lists of (path, (timestamp, value)) tuples are accepted
}
