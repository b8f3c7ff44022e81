package pgtest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartStopRestart(t *testing.T) {
	s := Start(t)
	dsn := s.CreateDB(t, "pgtest")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	query := func() (int, error) {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return 0, err
		}
		defer c.Close(ctx)
		var n int
		err = c.QueryRow(ctx, "SELECT count(*) FROM kept").Scan(&n)
		return n, err
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE kept (x int); INSERT INTO kept VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := query(); err == nil {
		t.Fatal("query succeeded with the server stopped")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	n, err := query()
	if err != nil || n != 2 {
		t.Fatalf("after restart: %d rows, %v; want 2 rows", n, err)
	}
}

func TestShared(t *testing.T) {
	var sh Shared
	a := sh.Get(t)
	require := func(ok bool, msg string) {
		t.Helper()
		if !ok {
			t.Fatal(msg)
		}
	}
	require(sh.Get(t) == a, "Get started a second server")
	ctx := context.Background()
	c, err := pgx.Connect(ctx, a.CreateDB(t, "shared"))
	require(err == nil, fmt.Sprint("connect: ", err))
	c.Close(ctx)
	require(sh.Close() == nil, "Close failed")
	_, err = os.Stat(a.Dir)
	require(os.IsNotExist(err), "Close left the directory")
	require(sh.Close() == nil, "second Close failed")
}
