// Compiled, never run (npm run typecheck): a program written against the built package, so the
// generated types and the wrapper are checked together. Each @ts-expect-error is a mistake the
// types must catch; if one stops being an error, tsc fails on the unused directive.
import {
  createMemoryClient,
  type Filter,
  type Memory,
  MemoryServiceError,
  type RecallResult,
  type SavedMemory,
  unwrap,
} from "../dist/index.js";

export async function usesTheClient(): Promise<void> {
  const client = createMemoryClient({ baseUrl: "http://127.0.0.1:8000", apiKey: "mem_x", userId: "u" });

  const saved: SavedMemory = await client.save({ key: "home", value: "Lives in Porto", importance: 0.8 });
  const created: boolean = saved.created;
  const superseded: string[] = saved.superseded_ids;
  // @ts-expect-error: a typo in a field name
  await client.save({ key: "home", valeu: "Lives in Porto" });
  // @ts-expect-error: value is required
  await client.save({ key: "home" });
  // @ts-expect-error: scope is one of the schema's values
  await client.save({ key: "home", value: "x", scope: "everyone" });

  const tagged = await client.save({ key: "home", value: "x", metadata: { app: "ios", n: 1 } });
  const metadata: { [key: string]: unknown } = tagged.metadata;
  await client.update(tagged.id, { metadata: { app: null } });
  await client.update(tagged.id, { metadata: {} }, { replaceMetadata: true });
  // @ts-expect-error: metadata is an object of your own keys
  await client.save({ key: "home", value: "x", metadata: "ios" });

  const filter: Filter = {
    and: [{ category: { in: ["food", "travel"] } }, { importance: { gte: 0.7 } }],
    not: { "metadata.app": { exists: true } },
    "metadata.ticket.id": 4521,
  };
  await client.search("Porto", { filter });
  await client.context("Porto", { filter: { or: [{ pinned: true }, { "metadata.app": "ios" }] } });
  client.list({ filter: { "metadata.app": { contains: "io" } } });
  // @ts-expect-error: a field a filter does not know
  client.list({ filter: { categry: "food" } });
  // @ts-expect-error: filters compare single values, not lists
  client.list({ filter: { "metadata.tags": ["vip"] } });
  // @ts-expect-error: the filter is an object, not its text
  await client.search("Porto", { filter: '{"metadata.app": "ios"}' });

  const results: RecallResult[] = await client.search("Porto", { top_k: 3 });
  const score: number | undefined = results[0]?.score;
  // @ts-expect-error: top_k is a number
  await client.search("Porto", { top_k: "3" });

  const context = await client.context("Where do I live?", { top_k: 2 });
  const hint: string = context.hint;

  const memories: Memory[] = [];
  for await (const pending of client.list({ status: "pending_review", page_size: 20 })) {
    memories.push(pending);
  }
  // @ts-expect-error: status is one of the schema's values
  client.list({ status: "gone" });

  const memory: Memory = await client.update(saved.id, { value: "Lives in Lisbon" });
  // @ts-expect-error: a memory's answer fields are read-only
  memory.value = "changed";
  await client.delete(memory.id);
  await client.withUser("other").eraseUser();

  const me = unwrap(await client.raw.GET("/api/me"));
  const externalId: string | null = me.external_id;
  // @ts-expect-error: a path the schema does not have
  await client.raw.GET("/api/nowhere", {});
  const run = await client.raw.GET("/api/extraction-runs/{task_id}", {
    params: { path: { task_id: "t" } },
  });
  const runStatus: string | undefined = run.data?.status;

  try {
    await client.get("id");
  } catch (error) {
    if (error instanceof MemoryServiceError) {
      const fields: Record<string, string[]> = error.fields;
      const status: number = error.status;
      void [fields, status];
    }
  }
  void [created, superseded, score, hint, memories, externalId, runStatus, metadata];
}
