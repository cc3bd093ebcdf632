// Package cache is the code under test: a read-through cache on Redis/Valkey.
package cache

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cache keeps computed values for a while.
type Cache struct {
	Client *redis.Client
	TTL    time.Duration
}

// Get answers the cached value, or computes it, stores it for TTL and answers it.
func (c *Cache) Get(ctx context.Context, key string, compute func() string) (string, error) {
	value, err := c.Client.Get(ctx, key).Result()
	if err == nil {
		return value, nil
	}
	if !errors.Is(err, redis.Nil) {
		return "", err
	}
	value = compute()
	return value, c.Client.Set(ctx, key, value, c.TTL).Err()
}
