package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestDemoThenInspect(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := runDemo(&out, dir, 2, 3); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"wrote", "bytes/sample", "count(up)", "=> 2 @"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := runDemo(&out, dir, 2, 3); err != nil { // second run reads the blocks
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "wrote") || !strings.Contains(out.String(), "=> 2 @") {
		t.Fatalf("second demo run:\n%s", out.String())
	}
	out.Reset()
	if err := runInspect(&out, dir); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "B/SAMPLE") || strings.Count(out.String(), "\n") < 3 {
		t.Fatalf("inspect output:\n%s", out.String())
	}
}
