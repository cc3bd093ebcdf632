// Start fakekey-server as a child process on a free port and wait until it listens.
//
//   const server = await startFakekey();      // FAKEKEY_SERVER overrides the command
//   const redis = new Redis(server.url);
//   ...
//   await server.stop();                       // SIGTERM; resolves with the exit code
//
// fakekey-server prints `fakekey ready port=PORT pid=PID url=redis://HOST:PORT` on stdout
// once it accepts connections; `--port 0` lets it pick a free port.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const READY = /^fakekey ready port=(\d+) pid=(\d+) url=(\S+)$/;

export function startFakekey({ command = process.env.FAKEKEY_SERVER ?? 'fakekey-server', args = [] } = {}) {
  const child = spawn(command, ['--port', '0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  return new Promise((resolve, reject) => {
    child.once('error', reject); // e.g. the command is not installed
    exited.then((status) => reject(new Error(`fakekey-server exited (${status}) before it was ready`)));
    // Keep reading stdout to its end, so the server's log lines never fill the pipe.
    createInterface({ input: child.stdout }).on('line', (line) => {
      const ready = READY.exec(line);
      if (ready) {
        resolve({
          port: Number(ready[1]),
          pid: Number(ready[2]),
          url: ready[3],
          stop() {
            child.kill('SIGTERM');
            return exited;
          },
        });
      }
    });
  });
}
