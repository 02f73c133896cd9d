// Starting and stopping `ebb serve` for the Node tests (openai_client, ollama_client,
// memory_page, browser_origin): one copy of the spawn-and-wait-for-the-URL logic.
import { spawn } from 'node:child_process';

// Spawns `EBB serve --port 0 ...args` and resolves to { server, url } once the service prints
// the address it listens on; rejects if it exits first (its stderr is inherited, so the reason
// shows in the test log).
export async function startServe(ebb, args) {
  const server = spawn(ebb, ['serve', '--port', '0', ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve, reject) => {
    let buf = '';
    server.stdout.on('data', (d) => {
      buf += d.toString();
      const m = buf.match(/http:\/\/[0-9.]+:\d+/);
      if (m) resolve(m[0]);
    });
    server.on('exit', (code) => reject(new Error(`ebb serve exited with ${code}`)));
  });
  return { server, url };
}

// Sends SIGTERM and waits for the process to exit (a draining service finishes what it has).
export async function stopServe(server) {
  if (!server || server.exitCode !== null) return;
  const exited = new Promise((resolve) => server.on('exit', resolve));
  server.kill('SIGTERM');
  await exited;
}
