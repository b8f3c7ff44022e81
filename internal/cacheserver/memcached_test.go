package cacheserver

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

func TestMemcachedClient(t *testing.T) {
	srv, err := ListenMemcached("127.0.0.1:0", openCache(t, t.TempDir()), MemcachedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	mc := memcache.New(srv.Addr().String())
	defer mc.Close()

	// The key holds colons: the range is after the last two.
	const body = `{"fields":{"v":[[0,1],[50,2.5],[100,"x"]]}}`
	if err := mc.Set(&memcache.Item{Key: "cpu:host=a:0:100", Value: []byte(body), Expiration: 60}); err != nil {
		t.Fatal(err)
	}
	it, err := mc.Get("cpu:host=a:0:100")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"status":"hit","start":0,"end":100,"fields":{"v":[[0,1],[50,2.5],[100,"x"]]}}`; it.Key != "cpu:host=a:0:100" || string(it.Value) != want {
		t.Fatalf("get: %s %s, want %s", it.Key, it.Value, want)
	}

	// A partial hit answers under the key of the range it covers.
	got, err := mc.GetMulti([]string{"cpu:host=a:40:60", "cpu:host=a:90:200", "cpu:host=a:101:200", "other:0:1"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"cpu:host=a:40:60":  `{"status":"hit","start":40,"end":60,"fields":{"v":[[50,2.5]]}}`,
		"cpu:host=a:90:100": `{"status":"partial","start":90,"end":100,"fields":{"v":[[100,"x"]]}}`,
	}
	if len(got) != len(want) {
		t.Fatalf("get multi: %d items, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] == nil || string(got[k].Value) != v {
			t.Fatalf("get multi %s: %v, want %s", k, got[k], v)
		}
	}

	// A bad data block is refused; the connection goes on.
	if err := mc.Set(&memcache.Item{Key: "cpu:host=a:0:100", Value: []byte(`{"fields":{"v":[[101,1]]}}`)}); err == nil || !strings.Contains(err.Error(), "outside the range") {
		t.Fatalf("set of a point outside the range: %v", err)
	}
	if err := mc.Set(&memcache.Item{Key: "cpu:host=a", Value: []byte(body)}); err == nil || !strings.Contains(err.Error(), "want <key>:<start>:<end>") {
		t.Fatalf("set without a range: %v", err)
	}

	// delete takes the key with or without a range and drops every range.
	if err := mc.Delete("cpu:host=a:0:0"); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.Get("cpu:host=a:0:100"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := mc.Delete("cpu:host=a"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestMemcachedProtocol(t *testing.T) {
	const body = `{"fields":{"v":[[0,1],[5,true],[10,"a b"]]}}`
	set := "set q:0:10 0 0 " + strconv.Itoa(len(body)) + "\r\n" + body + "\r\n"
	long := strings.Repeat("x", MaxLineLen+1)
	var manyKeys strings.Builder
	manyKeys.WriteString("get")
	for i := range 300 {
		manyKeys.WriteString(" q:" + strconv.Itoa(i) + ":" + strconv.Itoa(i+1))
	}
	for _, tc := range []struct{ name, in, out string }{
		{"version", "version\r\n", "VERSION aerie\r\n"},
		{"bare newlines", "version\nversion\n", "VERSION aerie\r\nVERSION aerie\r\n"},
		{"unknown command", "stats\r\nversion\r\n", "ERROR\r\nVERSION aerie\r\n"},
		{"empty line", "\r\n", "ERROR\r\n"},
		{"get without key", "get\r\n", "ERROR\r\n"},
		{"partial line at EOF", "version", ""},
		{"quit", "quit\r\nversion\r\n", ""},
		{"miss", "get q:0:10\r\n", "END\r\n"},
		{"set get", set + "get q:0:10\r\n",
			"STORED\r\n" + value("q:0:10", "", `{"status":"hit","start":0,"end":10,"fields":{"v":[[0,1],[5,true],[10,"a b"]]}}`) + "END\r\n"},
		{"gets has a cas unique", set + "gets q:0:4\r\n",
			"STORED\r\n" + value("q:0:4", " 0", `{"status":"hit","start":0,"end":4,"fields":{"v":[[0,1]]}}`) + "END\r\n"},
		{"partial names the covered range", set + "get q:5:20 q:11:20 q:-3:4\r\n",
			"STORED\r\n" + value("q:5:10", "", `{"status":"partial","start":5,"end":10,"fields":{"v":[[5,true],[10,"a b"]]}}`) +
				value("q:0:4", "", `{"status":"partial","start":0,"end":4,"fields":{"v":[[0,1]]}}`) + "END\r\n"},
		{"noreply", strings.Replace(set, "\r\n", " noreply\r\n", 1) + "version\r\n", "VERSION aerie\r\n"},
		{"add and replace are set", strings.Replace(set, "set", "add", 1) + strings.Replace(set, "set", "replace", 1), "STORED\r\nSTORED\r\n"},
		{"delete", set + "delete q:0:0\r\ndelete q\r\n" + set + "delete q noreply\r\nget q:0:10\r\n", "STORED\r\nDELETED\r\nNOT_FOUND\r\nSTORED\r\nEND\r\n"},
		{"get of many keys may be longer than a line", manyKeys.String() + "\r\n", "END\r\n"},
		{"line too long closes", long + "\r\nversion\r\n", "CLIENT_ERROR line too long\r\n"},
		{"line longer than the buffer closes", "get " + strings.Repeat("x", MaxGetLineLen) + "\r\nversion\r\n", "CLIENT_ERROR line too long\r\n"},
		{"key without range", "get q\r\nversion\r\n", "CLIENT_ERROR item key \"q\": want <key>:<start>:<end>\r\nVERSION aerie\r\n"},
		{"one bad key fails the get", "get q:0:1 q:x:1\r\n", "CLIENT_ERROR item key \"q:x:1\": start \"x\" is not an int64 integer\r\n"},
		{"start after end", "get q:5:1\r\n", "CLIENT_ERROR item key \"q:5:1\": start 5 is after end 1\r\n"},
		{"empty key", "get :0:1\r\n", "CLIENT_ERROR item key \":0:1\": key is empty\r\n"},
		{"key too long", "get " + strings.Repeat("k", 250) + ":0:1\r\n", "CLIENT_ERROR item key of 254 bytes is longer than 250\r\n"},
		{"bad data length", "set q:0:1 0 0 x\r\nversion\r\n", "CLIENT_ERROR bad data length \"x\"\r\nVERSION aerie\r\n"},
		{"too few arguments", "set q:0:1 0 0\r\nversion\r\n", "CLIENT_ERROR bad command line format: want set <key>:<start>:<end> <flags> <exptime> <bytes> [noreply]\r\nVERSION aerie\r\n"},
		{"bad flags skips the data", "set q:0:1 x 0 2\r\n{}\r\nversion\r\n", "CLIENT_ERROR bad flags \"x\"\r\nVERSION aerie\r\n"},
		{"bad key skips the data", "set q 0 0 2\r\n{}\r\nversion\r\n", "CLIENT_ERROR item key \"q\": want <key>:<start>:<end>\r\nVERSION aerie\r\n"},
		{"data longer than announced", "set q:0:1 0 0 2\r\n{}}\r\nversion\r\n", "CLIENT_ERROR bad data chunk: the data block is not followed by \\r\\n after 2 bytes\r\nVERSION aerie\r\n"},
		{"too large is skipped", "set q:0:1 0 0 300\r\n" + strings.Repeat("x", 300) + "\r\nversion\r\n",
			"CLIENT_ERROR data block of 300 bytes is larger than the item limit of 256 bytes\r\nVERSION aerie\r\n"},
		{"too large to skip closes", "set q:0:1 0 0 5000\r\nversion\r\n",
			"CLIENT_ERROR data block of 5000 bytes is larger than the item limit of 256 bytes (too large to skip: closing)\r\n"},
		{"bad JSON", "set q:0:1 0 0 2\r\n{]\r\n", "CLIENT_ERROR q:0:1: byte 1: want a member name, found ']'\r\n"},
		{"point outside the range", "set q:0:1 0 0 24\r\n" + `{"fields":{"v":[[2,1]]}}` + "\r\n",
			"CLIENT_ERROR q:0:1: field \"v\" point 0 (byte 16): timestamp 2 outside the range [0, 1]\r\n"},
		{"too many points", "set q:0:9 0 0 42\r\n" + `{"fields":{"v":[[1,1],[2,1],[3,1],[4,1]]}}` + "\r\n",
			"CLIENT_ERROR q:0:9: field \"v\" point 3 (byte 34): the body holds more than 3 points\r\n"},
		{"cas is not supported", "cas q:0:1 0 0 2 7\r\n{}\r\nversion\r\n", "CLIENT_ERROR cas is not supported: set a time range's points whole\r\nVERSION aerie\r\n"},
		{"append is not supported", "append q:0:1 0 0 2\r\n{}\r\n", "CLIENT_ERROR append is not supported: set a time range's points whole\r\n"},
		{"delete without key", "delete\r\n", "CLIENT_ERROR bad command line format: want delete <key> [noreply]\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := openCache(t, t.TempDir())
			var out bytes.Buffer
			serveMemcached(strings.NewReader(tc.in), &out, c, &MemcachedOptions{MaxItemSize: 256, MaxDiscard: 1024, MaxPoints: 3})
			if out.String() != tc.out {
				t.Fatalf("got  %q\nwant %q", out.String(), tc.out)
			}
			if err := checkReplies(out.Bytes()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// value is a get's answer for one item.
func value(key, cas, body string) string {
	return "VALUE " + key + " 0 " + strconv.Itoa(len(body)) + cas + "\r\n" + body + "\r\n"
}

// Close returns while clients are connected, idle or pipelining.
func TestMemcachedClose(t *testing.T) {
	srv, err := ListenMemcached("127.0.0.1:0", openCache(t, t.TempDir()), MemcachedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	idle, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	busy, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	// A client that writes without reading its replies.
	go func() {
		cmds := []byte(strings.Repeat("version\r\n", 1000))
		for {
			if _, err := busy.Write(cmds); err != nil {
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	done := make(chan error)
	go func() { done <- srv.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs")
	}
	busy.Close()
}
