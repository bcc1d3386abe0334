// A TCP proxy in front of the test server, driven by lines on stdin:
// "stall" (stop passing bytes, keep the connections: a server that stops
// answering), "refuse" (close every connection and the listener: a server
// that is down), "ok" (listen and pass bytes again). It answers each line
// with "ack" and prints its port first.
import net from "node:net";
import readline from "node:readline";

const [host, port] = [process.argv[2], Number(process.argv[3])];
let mode = "ok";
const conns = new Set();
let server;
let myPort = 0;

function listen(cb) {
  server = net.createServer((c) => {
    const up = net.connect(port, host);
    const pair = { c, up };
    conns.add(pair);
    const end = () => {
      c.destroy();
      up.destroy();
      conns.delete(pair);
    };
    c.on("error", end).on("close", end);
    up.on("error", end).on("close", end);
    c.on("data", (d) => mode === "ok" && up.write(d));
    up.on("data", (d) => mode === "ok" && c.write(d));
  });
  server.listen(myPort, "127.0.0.1", () => {
    myPort = server.address().port;
    cb?.();
  });
}

listen(() => console.log(myPort));
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  mode = line.trim();
  if (mode === "refuse") {
    for (const { c, up } of conns) c.destroy(), up.destroy();
    conns.clear();
    server.close(() => console.log("ack"));
  } else if (mode === "ok" && !server.listening) listen(() => console.log("ack"));
  else console.log("ack");
});
