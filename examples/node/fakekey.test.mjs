// A Node test suite against fakekey-server, with ioredis: `npm install && npm test`.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, test } from 'node:test';

import Redis from 'ioredis';

import { startFakekey } from './fakekey.mjs';

let server;
let redis;

before(async () => {
  server = await startFakekey();
  redis = new Redis(server.url);
});

after(async () => {
  await redis.quit();
  assert.equal(await server.stop(), 0); // a clean exit on SIGTERM
});

test('SET and GET', async () => {
  assert.equal(await redis.set('greeting', 'hello', 'EX', 60), 'OK');
  assert.equal(await redis.get('greeting'), 'hello');
  assert.equal(await redis.ttl('greeting'), 60);
});

test('a pipeline answers each command in order', async () => {
  const results = await redis.pipeline().del('hits').incr('hits').incrby('hits', 41).get('hits').exec();
  assert.deepEqual(results, [[null, 0], [null, 1], [null, 42], [null, '42']]);
});

test('a Lua script with cjson', async () => {
  await redis.hset('user:1', 'name', 'Ada', 'lang', 'en');
  const script = "return cjson.encode({name = redis.call('HGET', KEYS[1], 'name'), n = tonumber(ARGV[1])})";
  assert.deepEqual(JSON.parse(await redis.eval(script, 1, 'user:1', '7')), { name: 'Ada', n: 7 });
  await assert.rejects(redis.eval("return redis.call('INCR', KEYS[1])", 1, 'user:1'), /WRONGTYPE/);
});

test('publish reaches a subscriber', async () => {
  const subscriber = new Redis(server.url);
  try {
    assert.equal(await subscriber.subscribe('news'), 1);
    const message = once(subscriber, 'message');
    assert.equal(await redis.publish('news', 'fakekey is up'), 1);
    assert.deepEqual(await message, ['news', 'fakekey is up']);
  } finally {
    await subscriber.quit();
  }
});
