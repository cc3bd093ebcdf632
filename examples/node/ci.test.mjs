// The CI form: the harness starts the server and the suite only reads REDIS_URL.
//
//   fakekey-server run -- node --test          (npm run test:ci)
//
// `fakekey-server run` starts a server on a free port, exports REDIS_URL, VALKEY_URL,
// REDIS_HOST and REDIS_PORT to the command, stops the server when the command ends and
// exits with the command's status. Without REDIS_URL (a plain `npm test`) this is skipped.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import Redis from 'ioredis';

const url = process.env.REDIS_URL;
const outsideRun = url ? false : 'REDIS_URL is not set: run it under `fakekey-server run --`';

test('the server that fakekey-server run started', { skip: outsideRun }, async () => {
  const redis = new Redis(url);
  try {
    assert.equal(redis.options.port, Number(process.env.REDIS_PORT));
    assert.equal(process.env.VALKEY_URL, url);
    assert.match(await redis.info('server'), /^fakekey_version:/m);
    assert.equal(await redis.set('job:1', 'queued', 'EX', 60), 'OK');
    assert.deepEqual(await redis.multi().get('job:1').ttl('job:1').exec(), [[null, 'queued'], [null, 60]]);
  } finally {
    await redis.quit();
  }
});
