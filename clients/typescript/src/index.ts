/**
 * The memory service's TypeScript client: openapi-fetch over the types generated from the
 * service's OpenAPI schema (src/schema.d.ts), with the key, the end user and errors handled
 * once, and a few methods for the common calls. Everything else goes through `raw`, typed.
 */
import createClient, { type Client, type Middleware } from "openapi-fetch";

import type { components, operations, paths } from "./schema.js";

export type { components, operations, paths };

type Schemas = components["schemas"];
export type Memory = Schemas["Memory"];
export type SavedMemory = Schemas["SavedMemory"];
export type RecallResult = Schemas["RecallResult"];
/** The hint and its memories; `explanation` only with `explain: true`. */
export type ContextResponse = Schemas["ExplainedContext"];
/** search with explain: the results, and how the query was read and every memory considered. */
export type ExplainedSearch = Schemas["ExplainedSearch"];
export type Explanation = Schemas["Explanation"];
export type ErrorBody = Schemas["Error"];
export type MemoryCreate = Schemas["MemoryCreateRequest"];
export type MemoryUpdate = Schemas["PatchedMemoryUpdateRequest"];
/** A memory's `metadata`: your own keys (docs/api.md, "Metadata"), saved and returned as given. */
export type Metadata = { [key: string]: unknown };

/** A value a filter compares: filters compare single values, not lists or objects. */
export type FilterValue = string | number | boolean;
/** A field's condition: a value (equality), or operators that must all hold. */
export type FilterCondition =
  | FilterValue
  | {
      eq?: FilterValue;
      ne?: FilterValue;
      in?: FilterValue[];
      nin?: FilterValue[];
      gt?: FilterValue;
      gte?: FilterValue;
      lt?: FilterValue;
      lte?: FilterValue;
      /** A substring, case-sensitive. */
      contains?: string;
      /** Metadata paths only: whether the key is there. */
      exists?: boolean;
    };
/** The memory's own fields a filter may name (and `metadata.<key>[.<key>...]`). */
export type FilterField =
  | "category"
  | "key"
  | "scope"
  | "source"
  | "importance"
  | "confidence"
  | "created_at"
  | "updated_at"
  | "valid_from"
  | "pinned";
/**
 * A filter (docs/api.md, "Filters"), the one language of every read:
 * `{ and: [{ category: { in: ["food", "travel"] } }, { "metadata.app": "ios" }] }`.
 * Sent as its JSON text in a query string, as an object in a body.
 */
export type Filter = {
  and?: Filter[];
  or?: Filter[];
  not?: Filter;
} & { [field in FilterField]?: FilterCondition } & {
  [path: `metadata.${string}`]: FilterCondition;
};

type SearchQuery = NonNullable<operations["memories_search_retrieve"]["parameters"]["query"]>;
type ListQuery = NonNullable<operations["memories_list"]["parameters"]["query"]>;
export type SearchOptions = Omit<SearchQuery, "q" | "filter"> & { filter?: Filter };
export type ContextOptions = Omit<Schemas["ContextRequestRequest"], "query" | "filter"> & {
  filter?: Filter;
};
export type ListFilters = Omit<ListQuery, "page" | "filter"> & { filter?: Filter };
export interface UpdateOptions {
  /** Make `fields.metadata` the whole new metadata (PUT) rather than a merge patch (PATCH). */
  replaceMetadata?: boolean;
}

/** Query parameters with the filter as its JSON text, and none when it is absent. */
function withFilterText<T extends { filter?: Filter }>(
  options: T,
): Omit<T, "filter"> & { filter?: string } {
  const { filter, ...rest } = options;
  return filter === undefined ? rest : { ...rest, filter: JSON.stringify(filter) };
}

export type RawClient = Client<paths>;

export interface MemoryClientOptions {
  /** Where the service answers, e.g. "http://127.0.0.1:8000" (no /api). */
  baseUrl: string;
  /** An API key (mem_…), sent as `Authorization: Bearer`. */
  apiKey: string;
  /** The end user the requests act for (`X-User-Id`); a review key may leave it out. */
  userId?: string;
  /** A fetch of your own (a proxy, a test double of the network); the global fetch otherwise. */
  fetch?: typeof globalThis.fetch;
}

function isErrorBody(body: unknown): body is ErrorBody {
  return (
    typeof body === "object" &&
    body !== null &&
    typeof (body as ErrorBody).code === "string" &&
    typeof (body as ErrorBody).detail === "string"
  );
}

/** An answer other than 2xx: its status and the error JSON (`code`, `detail`, `fields`). */
export class MemoryServiceError extends Error {
  readonly status: number;
  /** The body as the service sent it: the error JSON, or the text when it was not JSON. */
  readonly body: unknown;
  readonly code: string;
  readonly detail: string;
  /** Each field at fault with its messages; empty when the error names none. */
  readonly fields: Record<string, string[]>;

  constructor(status: number, body: unknown) {
    const errorBody = isErrorBody(body) ? body : undefined;
    const detail = errorBody?.detail ?? (typeof body === "string" ? body : JSON.stringify(body));
    super(`${status} ${errorBody?.code ?? "error"}: ${detail}`);
    this.name = "MemoryServiceError";
    this.status = status;
    this.body = body;
    this.code = errorBody?.code ?? "error";
    this.detail = detail;
    this.fields = errorBody?.fields ?? {};
  }
}

interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The data of an openapi-fetch answer, or a MemoryServiceError: for calls made through `raw`. */
export function unwrap<T>(result: FetchResult<T>): T {
  if (!result.response.ok) {
    throw new MemoryServiceError(result.response.status, result.error);
  }
  return result.data as T;
}

function credentials(apiKey: string, userId: string | undefined): Middleware {
  return {
    onRequest({ request }) {
      request.headers.set("Authorization", `Bearer ${apiKey}`);
      if (userId !== undefined) {
        request.headers.set("X-User-Id", userId);
      }
      return request;
    },
  };
}

// The largest page the service serves: fewest requests when following pages.
const LIST_PAGE_SIZE = 200;

export class MemoryClient {
  /** The typed openapi-fetch client, key and user already set: every endpoint of the schema. */
  readonly raw: RawClient;
  readonly userId: string | undefined;
  private readonly options: MemoryClientOptions;

  constructor(options: MemoryClientOptions) {
    this.options = options;
    this.userId = options.userId;
    this.raw = createClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ""),
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    this.raw.use(credentials(options.apiKey, options.userId));
  }

  /** The same service and key, acting for another end user. */
  withUser(userId: string): MemoryClient {
    return new MemoryClient({ ...this.options, userId });
  }

  /** Save a fact; the memory that holds it (with `superseded_ids` when it replaced others). */
  async save(memory: MemoryCreate): Promise<SavedMemory> {
    return unwrap(await this.raw.POST("/api/memories", { body: memory }));
  }

  /** Memories matching the query, best first, each with its score; with `filter`, among the
   * memories it matches (inside the search, so it still gives `top_k`). */
  async search(query: string, options: SearchOptions = {}): Promise<RecallResult[]> {
    const answer = unwrap(
      await this.raw.GET("/api/memories/search", {
        params: { query: { ...withFilterText(options), q: query } },
      }),
    );
    return answer.data;
  }

  /** `search` and why (`explain=true`): `data`, the results, and `explanation`, how the query
   * was read and every memory recall considered, returned or not, with its score parts and
   * the reason in words. Counts as no access. */
  async searchExplained(
    query: string,
    options: Omit<SearchOptions, "explain"> = {},
  ): Promise<ExplainedSearch> {
    return unwrap(
      await this.raw.GET("/api/memories/search", {
        params: { query: { ...withFilterText(options), q: query, explain: true } },
      }),
    );
  }

  /** The hint for a model turn's system prompt and the memories it was made from; with
   * `filter`, made of the memories it matches (pinned ones too); `explain: true` adds
   * `explanation`, as `searchExplained`. */
  async context(query: string, options: ContextOptions = {}): Promise<ContextResponse> {
    return unwrap(await this.raw.POST("/api/memories/context", { body: { ...options, query } }));
  }

  async get(id: string): Promise<Memory> {
    return unwrap(await this.raw.GET("/api/memories/{id}", { params: { path: { id } } }));
  }

  /** Change the fields given, leaving the others as they are (PATCH). `metadata` is a JSON
   * merge patch (RFC 7386) of the memory's: a key given replaces that key, an object merges
   * into an object, a key set to `null` is removed, keys not named stay. With
   * `{ replaceMetadata: true }` it is the whole new metadata instead (PUT). */
  async update(id: string, fields: MemoryUpdate, options: UpdateOptions = {}): Promise<Memory> {
    const request = { params: { path: { id } }, body: fields };
    return unwrap(
      options.replaceMetadata
        ? await this.raw.PUT("/api/memories/{id}", request)
        : await this.raw.PATCH("/api/memories/{id}", request),
    );
  }

  /** Delete a memory (soft: the service keeps the row, its vector goes). */
  async delete(id: string): Promise<void> {
    unwrap(await this.raw.DELETE("/api/memories/{id}", { params: { path: { id } } }));
  }

  /** Every memory matching the filters, page after page as it is read:
   * `for await (const memory of client.list({ status: "active" }))`;
   * `client.list({ filter: { "metadata.app": "ios" } })` for those a filter matches. */
  async *list(filters: ListFilters = {}): AsyncGenerator<Memory, void, undefined> {
    const query = withFilterText(filters);
    for (let page = 1; ; page++) {
      const answer = unwrap(
        await this.raw.GET("/api/memories", {
          params: { query: { page_size: LIST_PAGE_SIZE, ...query, page } },
        }),
      );
      yield* answer.data;
      if (answer.next === null) {
        return;
      }
    }
  }

  /** Erase the end user this client acts for and all their data, for good. */
  async eraseUser(): Promise<void> {
    if (this.userId === undefined) {
      throw new TypeError("eraseUser needs a userId: create the client with one, or use withUser");
    }
    unwrap(await this.raw.POST("/api/me/erase", { body: { confirm: this.userId } }));
  }
}

export function createMemoryClient(options: MemoryClientOptions): MemoryClient {
  return new MemoryClient(options);
}
