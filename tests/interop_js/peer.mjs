// The JavaScript object-store client as a test peer: node peer.mjs <op> <url> <bucket> [args]
// Prints one JSON line; exits non-zero with the error on stderr. Across accounts (ADR-19), set
// NATS_JS_API_PREFIX and NATS_INBOX_PREFIX. `put NAME FILE [META]` takes META as JSON
// ({"description", "headers": {"Name": "value"}, "metadata": {...}}) for the object's record.
import { readFileSync, writeFileSync } from "node:fs";
import { connect, headers } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";

const [op, url, bucket, ...args] = process.argv.slice(2);
// nats.js returns an ObjectInfo wrapper; flatten it to the spec's fields
const plain = (i) => (i && i.info ? { ...i.info, mtime: i.mtime, revision: i.revision } : i);
const { NATS_JS_API_PREFIX: apiPrefix, NATS_INBOX_PREFIX: inboxPrefix } = process.env;
// nats.js takes credentials as options, not from the URL
const { username: user, password: pass, host } = new URL(url);
const auth = user ? { user: decodeURIComponent(user), pass: decodeURIComponent(pass) } : {};
const servers = user ? `nats://${host}` : url;
const nc = await connect({ servers, ...auth, ...(inboxPrefix ? { inboxPrefix } : {}) });
const objm = new Objm(jetstream(nc, apiPrefix ? { apiPrefix } : {}));
let out;
try {
  const store = await objm.open(bucket);
  if (op === "put") {
    const [name, file, given] = args;
    const { headers: fields = {}, ...meta } = JSON.parse(given ?? "{}");
    const record = { name, description: "written by nats.js", ...meta };
    if (Object.keys(fields).length) {
      record.headers = headers();
      for (const [key, value] of Object.entries(fields)) record.headers.append(key, value);
    }
    out = await store.putBlob(record, readFileSync(file));
  } else if (op === "get") {
    const [name, file] = args;
    const data = await store.getBlob(name);
    if (data === null) throw new Error(`no object ${name}`);
    writeFileSync(file, data);
    out = await store.info(name);
  } else if (op === "info") {
    out = await store.info(args[0]);
  } else if (op === "link") {
    const [name, target] = args;
    out = await store.link(name, await store.info(target));
  } else if (op === "list") {
    out = (await store.list()).map((i) => i.name);
  } else if (op === "delete") {
    out = await store.delete(args[0]);
  } else {
    throw new Error(`unknown op ${op}`);
  }
  console.log(JSON.stringify(plain(out) ?? null));
} finally {
  await nc.close();
}
