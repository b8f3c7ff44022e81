package ingest_test

import (
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/aerie-db/aerie/internal/ingest"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// A body with a bad line: the good lines are stored and the answer says
// what was refused, and where.
func ExampleNewInfluxHandler() {
	dir, err := os.MkdirTemp("", "ingest-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := tsdb.Open(dir, &tsdb.Options{FlushCheckInterval: -1})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	h := ingest.NewInfluxHandler(db, ingest.Options{})
	body := "cpu,host=a usage_idle=98.5,usage_user=1.5 1700000000\n" +
		"cpu,host=b usage_idle=oops 1700000000\n" +
		"svc,host=a status=\"up\",latency=3i 1700000000\n"
	req := httptest.NewRequest("POST", "/api/v2/write?precision=s", strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Println(rec.Code)
	fmt.Print(rec.Body.String())
	// Output:
	// 400
	// {"code":"invalid","message":"stored 3 samples, rejected 1 (parse_error: 1): line 2 col 23 (byte 75): field value has unrecognized type (at \"oops\")"}
}
