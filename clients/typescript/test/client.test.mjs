// The client against a running service: MEMORY_BASE_URL and MEMORY_API_KEY (a read,write key)
// name it. Each test acts for end users of its own, so tests need no cleaning between them.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";

import { createMemoryClient, MemoryServiceError, unwrap } from "../dist/index.js";

const baseUrl = process.env.MEMORY_BASE_URL;
const apiKey = process.env.MEMORY_API_KEY;
if (!baseUrl || !apiKey) {
  throw new Error("Set MEMORY_BASE_URL and MEMORY_API_KEY to a running service and a read,write key");
}

function clientForNewUser() {
  return createMemoryClient({ baseUrl, apiKey, userId: `ts-${randomUUID()}` });
}

async function all(memories) {
  const collected = [];
  for await (const memory of memories) {
    collected.push(memory);
  }
  return collected;
}

async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("expected the call to be refused");
}

test("a memory saved is read, changed and deleted", async () => {
  const client = clientForNewUser();
  const saved = await client.save({ key: "home", value: "Lives in Porto", category: "place" });
  assert.equal(saved.key, "home");
  assert.equal(saved.external_user_id, client.userId);
  assert.equal(saved.created, true);

  const read = await client.get(saved.id);
  assert.equal(read.value, "Lives in Porto");
  assert.equal(read.category, "place");

  const updated = await client.update(saved.id, { importance: 0.9 });
  assert.equal(updated.importance, 0.9);
  assert.equal((await client.get(saved.id)).importance, 0.9);

  await client.delete(saved.id);
  const gone = await rejection(client.get(saved.id));
  assert.ok(gone instanceof MemoryServiceError);
  assert.equal(gone.status, 404);
});

test("search answers the matching memory with its score, context the hint", async () => {
  const client = clientForNewUser();
  await client.save({ key: "home", value: "Lives in Porto" });
  await client.save({ key: "diet", value: "Vegetarian" });

  const results = await client.search("Porto", { top_k: 5 });
  assert.equal(results[0]?.key, "home");
  assert.equal(typeof results[0]?.score, "number");

  const context = await client.context("Which city, Porto or Lisbon, do I live in?");
  assert.match(context.hint, /Porto/);
  assert.ok(context.memories.some((memory) => memory.key === "home"));
});

test("searchExplained says why each memory was returned or left out", async () => {
  const client = clientForNewUser();
  await client.save({ key: "music", value: "Loves 1970s jazz fusion" });
  await client.save({ key: "home", value: "Lives in Porto" });

  const explained = await client.searchExplained("jazz");
  assert.deepEqual(
    explained.data.map((hit) => hit.key),
    ["music"],
  );
  const byKey = Object.fromEntries(
    explained.explanation.candidates.map((c) => [c.memory.key, c]),
  );
  assert.equal(byKey.music.decision, "returned");
  assert.deepEqual(byKey.music.score_parts, explained.data[0].score_parts);
  assert.equal(byKey.home.decision, "excluded");
  assert.ok(byKey.home.reason.length > 0);

  const context = await client.context("Who wrote the Odyssey?", { explain: true });
  assert.equal(context.explanation?.query.about_user, false);
});

test("list follows the pages to every memory", async () => {
  const client = clientForNewUser();
  for (const key of ["home", "job", "diet"]) {
    await client.save({ key, value: `The ${key} fact` });
  }
  const memories = await all(client.list({ page_size: 2 }));
  assert.deepEqual(memories.map((memory) => memory.key).sort(), ["diet", "home", "job"]);
  assert.deepEqual(await all(client.list({ category: "none such" })), []);
});

test("an unknown memory is a 404 carrying the error JSON", async () => {
  const error = await rejection(clientForNewUser().get(randomUUID()));
  assert.ok(error instanceof MemoryServiceError);
  assert.equal(error.status, 404);
  assert.equal(error.code, "not_found");
  assert.equal(error.body.code, "not_found");
  assert.equal(typeof error.detail, "string");
  assert.match(error.message, /^404 not_found: /);
});

test("bad input is a 400 naming the field", async () => {
  const client = clientForNewUser();
  const error = await rejection(client.save({ key: "home", value: "" }));
  assert.ok(error instanceof MemoryServiceError);
  assert.equal(error.status, 400);
  assert.equal(error.code, "invalid");
  assert.deepEqual(Object.keys(error.fields), ["value"]);
  assert.deepEqual(error.body.fields, error.fields);

  const unknown = await rejection(all(client.list({ stauts: "archived" })));
  assert.equal(unknown.status, 400);
  assert.ok("stauts" in unknown.fields);
});

test("a wrong key is a 401", async () => {
  const client = createMemoryClient({ baseUrl, apiKey: "mem_wrong", userId: "ts-anyone" });
  const error = await rejection(all(client.list()));
  assert.ok(error instanceof MemoryServiceError);
  assert.equal(error.status, 401);
});

test("withUser acts for another user, who sees none of the first one's memories", async () => {
  const alice = clientForNewUser();
  const bob = alice.withUser(`ts-${randomUUID()}`);
  assert.notEqual(bob.userId, alice.userId);
  const saved = await alice.save({ key: "home", value: "Lives in Porto" });

  assert.equal((await rejection(bob.get(saved.id))).status, 404);
  assert.deepEqual(await all(bob.list()), []);
  assert.deepEqual(await bob.search("Porto"), []);
  assert.equal((await rejection(bob.delete(saved.id))).status, 404);
  assert.equal((await alice.get(saved.id)).value, "Lives in Porto");
});

test("the raw client reaches every endpoint with the key and user set", async () => {
  const client = clientForNewUser();
  await client.save({ key: "home", value: "Lives in Porto" });
  const me = unwrap(await client.raw.GET("/api/me"));
  assert.equal(me.external_id, client.userId);
  const count = unwrap(await client.raw.GET("/api/memories/count"));
  assert.equal(count.active, 1);
  const missing = await client.raw.GET("/api/memories/{id}", {
    params: { path: { id: randomUUID() } },
  });
  assert.equal(missing.response.status, 404);
  assert.throws(() => unwrap(missing), (error) => error instanceof MemoryServiceError);
});

test("eraseUser erases the user and their memories", async () => {
  const client = clientForNewUser();
  const saved = await client.save({ key: "home", value: "Lives in Porto" });
  await client.eraseUser();
  assert.equal((await rejection(client.get(saved.id))).status, 404);
  assert.deepEqual(await all(client.list()), []);

  const noUser = createMemoryClient({ baseUrl, apiKey });
  await assert.rejects(noUser.eraseUser(), TypeError);
});

test("metadata is saved, merged by update, replaced with replaceMetadata, and filtered on", async () => {
  const client = clientForNewUser();
  const ios = await client.save({
    key: "home",
    value: "Lives in Porto",
    metadata: { app: "ios", ticket: { id: 4521, status: "open" } },
  });
  const web = await client.save({ key: "diet", value: "Vegetarian", metadata: { app: "web" } });
  await client.save({ key: "job", value: "Works as a baker" });
  assert.deepEqual(ios.metadata, { app: "ios", ticket: { id: 4521, status: "open" } });
  assert.deepEqual((await client.get(web.id)).metadata, { app: "web" });

  const merged = await client.update(ios.id, { metadata: { ticket: { status: "closed" }, app: null } });
  assert.deepEqual(merged.metadata, { ticket: { id: 4521, status: "closed" } });
  const replaced = await client.update(ios.id, { metadata: { app: "ios" } }, { replaceMetadata: true });
  assert.deepEqual(replaced.metadata, { app: "ios" });

  const keys = async (filter) =>
    (await all(client.list({ filter }))).map((memory) => memory.key).sort();
  assert.deepEqual(await keys({ "metadata.app": "ios" }), ["home"]);
  assert.deepEqual(await keys({ or: [{ "metadata.app": "web" }, { key: "job" }] }), ["diet", "job"]);
  assert.deepEqual(await keys({ not: { "metadata.app": { exists: true } } }), ["job"]);

  const found = await client.search("where does the user live", {
    filter: { "metadata.app": { in: ["web"] } },
    min_relevance: 0,
  });
  assert.deepEqual(found.map((memory) => memory.key), ["diet"]);
  const context = await client.context("What does the user eat?", { filter: { "metadata.app": "ios" } });
  assert.ok(context.memories.every((memory) => memory.key === "home"));
});

test("a filter the service refuses is a 400 naming its path", async () => {
  const client = clientForNewUser();
  const error = await rejection(
    all(client.list({ filter: { and: [{ key: "home" }, { "metadata.app": { like: "i" } }] } })),
  );
  assert.ok(error instanceof MemoryServiceError);
  assert.equal(error.status, 400);
  assert.deepEqual(Object.keys(error.fields), ["filter.and[1].metadata.app.like"]);
});
