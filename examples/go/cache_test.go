// Run with a server of its own:
//
//	fakekey-server run -- go test ./...
//
// fakekey-server run exports REDIS_URL (and VALKEY_URL, REDIS_HOST, REDIS_PORT); without
// it the tests are skipped.
package cache

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func client(t *testing.T) *redis.Client {
	url := os.Getenv("REDIS_URL")
	if url == "" {
		t.Skip("REDIS_URL is not set: run under `fakekey-server run --`")
	}
	options, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(options)
	t.Cleanup(func() { c.Close() })
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestComputesOnceThenReadsTheCache(t *testing.T) {
	ctx := context.Background()
	cache := &Cache{Client: client(t), TTL: time.Minute}
	calls := 0
	compute := func() string { calls++; return "42" }
	for i := 0; i < 3; i++ {
		value, err := cache.Get(ctx, "answer", compute)
		if err != nil || value != "42" {
			t.Fatalf("Get = %q, %v", value, err)
		}
	}
	if calls != 1 {
		t.Fatalf("computed %d times, want 1", calls)
	}
	if ttl := cache.Client.TTL(ctx, "answer").Val(); ttl != time.Minute {
		t.Fatalf("TTL = %v, want 1m", ttl)
	}
}

func TestExpiryWithTheServerClock(t *testing.T) {
	ctx := context.Background()
	c := client(t)
	c.Set(ctx, "session", "abc", 10*time.Second)
	// fakekey's clock: move it instead of sleeping (FAKEKEY.CLOCK, docs/cli.md)
	if err := c.Do(ctx, "FAKEKEY.CLOCK", "ADVANCE", 10001).Err(); err != nil {
		t.Fatal(err)
	}
	defer c.Do(ctx, "FAKEKEY.CLOCK", "REAL")
	if err := c.Get(ctx, "session").Err(); err != redis.Nil {
		t.Fatalf("Get after expiry: %v, want redis.Nil", err)
	}
}
