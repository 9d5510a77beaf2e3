/**
 * Secrets never leave the process in a message: a provider that echoes the request's
 * `Authorization` header (or the key itself) in an error body would otherwise have it written to
 * results, reports, the table and the logs. Every provider error's message passes through
 * {@link redactSecrets} when it is made, and so does every failure a result records; every
 * model answer passes through {@link redactKnownSecrets} when it is built (a model may echo a
 * key it was shown, in an answer that is otherwise fine).
 *
 * Two nets: the keys this process was given (remembered when a provider is built from them,
 * {@link rememberSecret}), replaced wherever they appear; and the shapes keys and credentials
 * take in text (a bearer token, an `sk-…` or `AIza…` key, an `api-key: …` header, a `?key=`
 * parameter), for keys this process never saw (another tenant's, a proxy's).
 */

const known = new Set<string>();

/** The shortest value remembered as a secret: shorter ones would match ordinary text. */
const MIN_SECRET_CHARS = 8;

/** Remembers a key this process holds, so that no message carrying it leaves the process. */
export function rememberSecret(value: string | undefined): void {
  const secret = value?.trim();
  if (secret && secret.length >= MIN_SECRET_CHARS) known.add(secret);
}

const REDACTED = '[redacted]';

/** The shapes a credential takes in text, each with what stays of it. */
const SHAPES: readonly [RegExp, string][] = [
  // `Authorization: Bearer …`, `Basic …`: the scheme stays (and a sentence's full stop after it).
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{5,}[A-Za-z0-9_~+/=-]/gi, `$1 ${REDACTED}`],
  // OpenAI and Anthropic keys (`sk-…`, `sk-proj-…`, `sk-ant-…`), Google API keys (`AIza…`).
  [/\bsk-[A-Za-z0-9_-]{6,}/g, `sk-${REDACTED}`],
  [/\bAIza[0-9A-Za-z_-]{20,}/g, REDACTED],
  // A key given as a header or a field: `x-api-key: …`, `"api_key": "…"`, `x-goog-api-key=…`.
  [
    /((?:x-api-key|x-goog-api-key|api[_-]?key|access[_-]?token|authorization)["']?\s*[:=]\s*["']?)[^\s"'&,;}]{6,}/gi,
    `$1${REDACTED}`,
  ],
  // A key in a URL's query (`?key=…`, as Gemini's REST API takes it).
  [/([?&](?:key|api_key|apikey|access_token)=)[^&\s"'#]+/gi, `$1${REDACTED}`],
];

/**
 * `text` with every secret this process holds replaced, and nothing else: for a model's answer,
 * where the credential shapes of {@link redactSecrets} would rewrite ordinary prose ("Basic
 * knowledge", a tutorial's `api_key = …`) and so change what is scored.
 */
export function redactKnownSecrets(text: string): string {
  let out = text;
  for (const secret of known) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

/** `text` with every secret this process holds, and every credential-shaped string, replaced. */
export function redactSecrets(text: string): string {
  let out = redactKnownSecrets(text);
  for (const [shape, replacement] of SHAPES) out = out.replace(shape, replacement);
  return out;
}

/**
 * An error as it may travel (a cause kept for its name and message): a plain Error with the same
 * name and the message redacted, its own cause redacted the same way, and no other property (an
 * SDK error's request headers or body stay behind).
 */
export function redactedError(error: unknown, depth = 0): Error {
  const source = error instanceof Error ? error : new Error(String(error));
  const cause = depth < 4 && source.cause !== undefined ? redactedError(source.cause, depth + 1) : undefined;
  const copy = new Error(redactSecrets(source.message), cause === undefined ? undefined : { cause });
  copy.name = source.name;
  copy.stack = `${copy.name}: ${copy.message}`;
  return copy;
}
