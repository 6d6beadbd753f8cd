// A TCP proxy on 127.0.0.1 in front of `host:port` (argv) that counts the chunks its clients send.
// It runs in a process of its own so that it reads each write as it arrives, not once its parent's turn of work is
// over. The parent learns its port from the first message and asks for the count with 'count'.
import net from 'node:net';

const [host, port] = process.argv.slice(2);
let chunks = 0;
const server = net.createServer((client) => {
  const upstream = net.connect(Number(port), host);
  client.on('data', (data) => {
    chunks += 1;
    upstream.write(data);
  });
  upstream.pipe(client);
  for (const socket of [client, upstream]) socket.on('error', () => undefined);
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
});
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as net.AddressInfo).port }));
process.on('message', (message) => {
  if (message === 'count') process.send?.({ chunks });
});
process.on('disconnect', () => process.exit(0));
