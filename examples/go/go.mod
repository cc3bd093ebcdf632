module example.com/fakekey-go-example

go 1.21

require github.com/redis/go-redis/v9 v9.7.0
