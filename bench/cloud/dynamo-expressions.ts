/**
 * DynamoDB's expression language, as the stand-in in dynamo.ts needs it: condition and filter
 * expressions (comparisons, BETWEEN, IN, AND/OR/NOT, parentheses, `attribute_exists`,
 * `attribute_not_exists`, `attribute_type`, `begins_with`, `contains`, `size`), key conditions,
 * projections and update expressions (SET with `+`, `-`, `if_not_exists`, `list_append`; REMOVE;
 * ADD; DELETE), with document paths (`a.b[2]`), `#name` and `:value` placeholders, reserved
 * words refused unless aliased, and the ValidationExceptions DynamoDB sends for what it refuses.
 *
 * Parsed expressions are cached by text: the adapters send the same few expressions again and
 * again.
 */
import { isReserved } from './dynamo-reserved.js';
import {
  type AttributeValue,
  addNumbers,
  checkValue,
  compareScalars,
  equalValues,
  type Item,
  typeOf,
  validation,
} from './dynamo-values.js';

export type ExpressionKind = 'Condition' | 'Filter' | 'KeyCondition' | 'Projection' | 'Update';

/** A path element: an attribute name (literal, or `#alias` to resolve) or a list index. */
type PathElement = { name: string; alias: boolean } | number;

export interface PathNode {
  kind: 'path';
  elements: PathElement[];
}
interface ValueNode {
  kind: 'value';
  name: string;
}
interface SizeNode {
  kind: 'size';
  path: PathNode;
}
type Operand = PathNode | ValueNode | SizeNode;

export type Condition =
  | { kind: 'compare'; op: '=' | '<>' | '<' | '<=' | '>' | '>='; left: Operand; right: Operand }
  | { kind: 'between'; operand: Operand; low: Operand; high: Operand }
  | { kind: 'in'; operand: Operand; list: Operand[] }
  | { kind: 'function'; name: string; args: Operand[] }
  | { kind: 'and' | 'or'; left: Condition; right: Condition }
  | { kind: 'not'; operand: Condition };

type SetOperand =
  | PathNode
  | ValueNode
  | { kind: 'if_not_exists'; path: PathNode; value: SetOperand }
  | { kind: 'list_append'; first: SetOperand; second: SetOperand };
type SetValue = SetOperand | { kind: 'arithmetic'; op: '+' | '-'; left: SetOperand; right: SetOperand };

export interface UpdateActions {
  set: { path: PathNode; value: SetValue }[];
  remove: PathNode[];
  add: { path: PathNode; value: ValueNode }[];
  delete: { path: PathNode; value: ValueNode }[];
}

/** A parsed expression and the placeholders it uses. */
export interface Parsed<T> {
  kind: ExpressionKind;
  tree: T;
  names: ReadonlySet<string>;
  values: ReadonlySet<string>;
}

// --- Tokens ------------------------------------------------------------------------------------

type Token =
  | { type: 'name' | 'alias' | 'value' | 'index'; text: string; at: number }
  | { type: 'symbol'; text: string; at: number }
  | { type: 'end'; text: ''; at: number };

const TOKEN =
  /\s*(?:(#[A-Za-z0-9_]+)|(:[A-Za-z0-9_]+)|([A-Za-z_][A-Za-z0-9_]*)|(\d+)|(<>|<=|>=|[=<>+\-(),.[\]]))/y;

function tokenize(text: string, kind: ExpressionKind): Token[] {
  const tokens: Token[] = [];
  TOKEN.lastIndex = 0;
  let at = 0;
  while (at < text.length) {
    if (/^\s*$/.test(text.slice(at))) break;
    TOKEN.lastIndex = at;
    const match = TOKEN.exec(text);
    if (!match) {
      const rest = text.slice(at).trimStart();
      throw validation(
        `Invalid ${kind}Expression: Syntax error; token: "${rest[0]}", near: "${rest.slice(0, 8)}"`,
      );
    }
    const start = TOKEN.lastIndex - match[0].trimStart().length;
    if (match[1]) tokens.push({ type: 'alias', text: match[1], at: start });
    else if (match[2]) tokens.push({ type: 'value', text: match[2], at: start });
    else if (match[3]) tokens.push({ type: 'name', text: match[3], at: start });
    else if (match[4]) tokens.push({ type: 'index', text: match[4], at: start });
    else tokens.push({ type: 'symbol', text: match[5]!, at: start });
    at = TOKEN.lastIndex;
  }
  tokens.push({ type: 'end', text: '', at: text.length });
  return tokens;
}

const KEYWORDS = new Set(['AND', 'OR', 'NOT', 'BETWEEN', 'IN']);
const CONDITION_FUNCTIONS = new Set([
  'attribute_exists',
  'attribute_not_exists',
  'attribute_type',
  'begins_with',
  'contains',
]);

class Parser {
  private i = 0;
  readonly names = new Set<string>();
  readonly values = new Set<string>();

  constructor(
    private readonly text: string,
    private readonly kind: ExpressionKind,
    private readonly tokens: Token[],
  ) {}

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.i + offset, this.tokens.length - 1)]!;
  }

  private next(): Token {
    const token = this.peek();
    if (this.i < this.tokens.length - 1) this.i++;
    return token;
  }

  private isWord(word: string, offset = 0): boolean {
    const token = this.peek(offset);
    return token.type === 'name' && token.text.toUpperCase() === word;
  }

  private isSymbol(symbol: string, offset = 0): boolean {
    const token = this.peek(offset);
    return token.type === 'symbol' && token.text === symbol;
  }

  syntaxError(token = this.peek()): never {
    const near = this.text.slice(Math.max(0, token.at - 4), token.at + Math.max(token.text.length, 1) + 4);
    throw validation(
      token.type === 'end'
        ? `Invalid ${this.kind}Expression: Syntax error; token: "<EOF>", near: "${near}"`
        : `Invalid ${this.kind}Expression: Syntax error; token: "${token.text}", near: "${near}"`,
    );
  }

  private expectSymbol(symbol: string): void {
    if (!this.isSymbol(symbol)) this.syntaxError();
    this.next();
  }

  atEnd(): boolean {
    return this.peek().type === 'end';
  }

  path(): PathNode {
    const elements: PathElement[] = [this.pathName()];
    for (;;) {
      if (this.isSymbol('.')) {
        this.next();
        elements.push(this.pathName());
      } else if (this.isSymbol('[')) {
        this.next();
        const index = this.next();
        if (index.type !== 'index') this.syntaxError(index);
        this.expectSymbol(']');
        elements.push(Number(index.text));
      } else {
        return { kind: 'path', elements };
      }
    }
  }

  private pathName(): PathElement {
    const token = this.next();
    if (token.type === 'alias') {
      this.names.add(token.text);
      return { name: token.text, alias: true };
    }
    if (token.type !== 'name') this.syntaxError(token);
    if (isReserved(token.text)) {
      throw validation(
        `Invalid ${this.kind}Expression: Attribute name is a reserved keyword; reserved keyword: ${token.text}`,
      );
    }
    return { name: token.text, alias: false };
  }

  private valueNode(): ValueNode {
    const token = this.next();
    if (token.type !== 'value') this.syntaxError(token);
    this.values.add(token.text);
    return { kind: 'value', name: token.text };
  }

  operand(): Operand {
    const token = this.peek();
    if (token.type === 'value') return this.valueNode();
    if (token.type === 'name' && this.isSymbol('(', 1)) {
      if (token.text !== 'size') {
        throw validation(
          `Invalid ${this.kind}Expression: The function is not allowed to be used this way in an expression; function: ${token.text}`,
        );
      }
      this.next();
      this.next();
      const path = this.path();
      this.expectSymbol(')');
      return { kind: 'size', path };
    }
    if (token.type === 'name' || token.type === 'alias') return this.path();
    this.syntaxError(token);
  }

  condition(): Condition {
    let left = this.conjunction();
    while (this.isWord('OR')) {
      this.next();
      left = { kind: 'or', left, right: this.conjunction() };
    }
    return left;
  }

  private conjunction(): Condition {
    let left = this.negation();
    while (this.isWord('AND')) {
      this.next();
      left = { kind: 'and', left, right: this.negation() };
    }
    return left;
  }

  private negation(): Condition {
    if (this.isWord('NOT')) {
      this.next();
      return { kind: 'not', operand: this.negation() };
    }
    return this.primary();
  }

  private primary(): Condition {
    if (this.isSymbol('(')) {
      this.next();
      const inner = this.condition();
      this.expectSymbol(')');
      return inner;
    }
    const token = this.peek();
    if (token.type === 'name' && this.isSymbol('(', 1) && token.text !== 'size') {
      if (!CONDITION_FUNCTIONS.has(token.text)) {
        throw validation(`Invalid ${this.kind}Expression: Invalid function name; function: ${token.text}`);
      }
      this.next();
      this.next();
      const args: Operand[] = [this.operand()];
      while (this.isSymbol(',')) {
        this.next();
        args.push(this.operand());
      }
      this.expectSymbol(')');
      const arity = token.text === 'attribute_exists' || token.text === 'attribute_not_exists' ? 1 : 2;
      if (args.length !== arity || args[0]!.kind !== 'path') {
        throw validation(
          `Invalid ${this.kind}Expression: Incorrect number of operands for operator or function; operator or function: ${token.text}, number of operands: ${args.length}`,
        );
      }
      return { kind: 'function', name: token.text, args };
    }
    if (token.type === 'name' && KEYWORDS.has(token.text.toUpperCase())) this.syntaxError(token);
    const left = this.operand();
    const op = this.peek();
    if (op.type === 'symbol' && ['=', '<>', '<', '<=', '>', '>='].includes(op.text)) {
      this.next();
      return { kind: 'compare', op: op.text as '=', left, right: this.operand() };
    }
    if (this.isWord('BETWEEN')) {
      this.next();
      const low = this.operand();
      if (!this.isWord('AND')) this.syntaxError();
      this.next();
      return { kind: 'between', operand: left, low, high: this.operand() };
    }
    if (this.isWord('IN')) {
      this.next();
      this.expectSymbol('(');
      const list: Operand[] = [this.operand()];
      while (this.isSymbol(',')) {
        this.next();
        list.push(this.operand());
      }
      this.expectSymbol(')');
      return { kind: 'in', operand: left, list };
    }
    this.syntaxError(op);
  }

  /** Paths separated by commas (a projection). */
  paths(): PathNode[] {
    const paths = [this.path()];
    while (this.isSymbol(',')) {
      this.next();
      paths.push(this.path());
    }
    return paths;
  }

  update(): UpdateActions {
    const actions: UpdateActions = { set: [], remove: [], add: [], delete: [] };
    const seen = new Set<string>();
    while (!this.atEnd()) {
      const clause = this.next();
      const word = clause.type === 'name' ? clause.text.toUpperCase() : '';
      if (!['SET', 'REMOVE', 'ADD', 'DELETE'].includes(word)) this.syntaxError(clause);
      if (seen.has(word)) {
        throw validation(
          `Invalid UpdateExpression: The "${word}" section can only be used once in an update expression;`,
        );
      }
      seen.add(word);
      for (;;) {
        const path = this.path();
        if (word === 'SET') {
          this.expectSymbol('=');
          actions.set.push({ path, value: this.setValue() });
        } else if (word === 'REMOVE') {
          actions.remove.push(path);
        } else if (word === 'ADD') {
          actions.add.push({ path, value: this.valueNode() });
        } else {
          actions.delete.push({ path, value: this.valueNode() });
        }
        if (!this.isSymbol(',')) break;
        this.next();
      }
    }
    if (seen.size === 0) this.syntaxError();
    return actions;
  }

  private setValue(): SetValue {
    const left = this.setOperand();
    if (this.isSymbol('+') || this.isSymbol('-')) {
      const op = this.next().text as '+' | '-';
      return { kind: 'arithmetic', op, left, right: this.setOperand() };
    }
    return left;
  }

  private setOperand(): SetOperand {
    const token = this.peek();
    if (token.type === 'value') return this.valueNode();
    if (token.type === 'name' && this.isSymbol('(', 1)) {
      this.next();
      this.next();
      if (token.text === 'if_not_exists') {
        const path = this.path();
        this.expectSymbol(',');
        const value = this.setOperand();
        this.expectSymbol(')');
        return { kind: 'if_not_exists', path, value };
      }
      if (token.text === 'list_append') {
        const first = this.setOperand();
        this.expectSymbol(',');
        const second = this.setOperand();
        this.expectSymbol(')');
        return { kind: 'list_append', first, second };
      }
      throw validation(`Invalid UpdateExpression: Invalid function name; function: ${token.text}`);
    }
    return this.path();
  }
}

const cache = new Map<string, Parsed<unknown>>();

function parse<T>(kind: ExpressionKind, text: string, build: (parser: Parser) => T): Parsed<T> {
  const key = `${kind}\u0000${text}`;
  const hit = cache.get(key);
  if (hit) return hit as Parsed<T>;
  if (text.trim() === '') throw validation(`Invalid ${kind}Expression: The expression can not be empty;`);
  const parser = new Parser(text, kind, tokenize(text, kind));
  const tree = build(parser);
  if (!parser.atEnd()) parser.syntaxError();
  const parsed: Parsed<T> = { kind, tree, names: parser.names, values: parser.values };
  if (cache.size > 10_000) cache.clear();
  cache.set(key, parsed);
  return parsed;
}

export function parseCondition(
  text: string,
  kind: 'Condition' | 'Filter' | 'KeyCondition' = 'Condition',
): Parsed<Condition> {
  return parse(kind, text, (p) => p.condition());
}

export function parseUpdate(text: string): Parsed<UpdateActions> {
  return parse('Update', text, (p) => p.update());
}

export function parseProjection(text: string): Parsed<PathNode[]> {
  return parse('Projection', text, (p) => p.paths());
}

// --- Placeholders ------------------------------------------------------------------------------

/** The expression attribute names and values of a request, checked against its expressions. */
export interface Placeholders {
  names: Record<string, string>;
  values: Record<string, AttributeValue>;
}

/**
 * Checks a request's `ExpressionAttributeNames`/`Values` against every expression it carries,
 * as DynamoDB does: each placeholder used is defined, each defined one is used, values are valid.
 */
export function placeholders(
  expressions: readonly Parsed<unknown>[],
  names: unknown,
  values: unknown,
): Placeholders {
  const givenNames = (names ?? {}) as Record<string, string>;
  const givenValues = (values ?? {}) as Record<string, unknown>;
  if (expressions.length === 0) {
    if (names !== undefined)
      throw validation('ExpressionAttributeNames can only be specified when using expressions');
    if (values !== undefined)
      throw validation('ExpressionAttributeValues can only be specified when using expressions');
  }
  const usedNames = new Set<string>();
  const usedValues = new Set<string>();
  for (const expression of expressions) {
    for (const name of expression.names) {
      if (givenNames[name] === undefined) {
        throw validation(
          `Invalid ${expression.kind}Expression: An expression attribute name used in the document path is not defined; attribute name: ${name}`,
        );
      }
      usedNames.add(name);
    }
    for (const value of expression.values) {
      if (givenValues[value] === undefined) {
        throw validation(
          `Invalid ${expression.kind}Expression: An expression attribute value used in expression is not defined; attribute value: ${value}`,
        );
      }
      usedValues.add(value);
    }
  }
  const unusedNames = Object.keys(givenNames).filter((n) => !usedNames.has(n));
  if (unusedNames.length > 0) {
    throw validation(
      `Value provided in ExpressionAttributeNames unused in expressions: keys: {${unusedNames.join(', ')}}`,
    );
  }
  const unusedValues = Object.keys(givenValues).filter((v) => !usedValues.has(v));
  if (unusedValues.length > 0) {
    throw validation(
      `Value provided in ExpressionAttributeValues unused in expressions: keys: {${unusedValues.join(', ')}}`,
    );
  }
  const checked: Record<string, AttributeValue> = {};
  for (const [name, value] of Object.entries(givenValues)) {
    try {
      checked[name] = checkValue(value);
    } catch (err) {
      throw validation(
        `ExpressionAttributeValues contains invalid value: ${(err as Error).message} for key ${name}`,
      );
    }
  }
  return { names: givenNames, values: checked };
}

// --- Evaluation --------------------------------------------------------------------------------

/** A path with its aliases resolved: attribute names and list indexes. */
export type ResolvedPath = (string | number)[];

export function resolvePath(path: PathNode, ctx: Placeholders): ResolvedPath {
  return path.elements.map((e) => (typeof e === 'number' ? e : e.alias ? ctx.names[e.name]! : e.name));
}

export function getPath(item: Item, path: ResolvedPath): AttributeValue | undefined {
  let value: AttributeValue | undefined = item[path[0] as string];
  for (let i = 1; i < path.length && value !== undefined; i++) {
    const element = path[i]!;
    if (typeof element === 'number') value = value.L?.[element];
    else value = value.M?.[element];
  }
  return value;
}

function operandValue(operand: Operand, item: Item, ctx: Placeholders): AttributeValue | undefined {
  switch (operand.kind) {
    case 'value':
      return ctx.values[operand.name];
    case 'path':
      return getPath(item, resolvePath(operand, ctx));
    case 'size': {
      const value = getPath(item, resolvePath(operand.path, ctx));
      return value === undefined ? undefined : { N: String(sizeOf(value)) };
    }
  }
}

function sizeOf(value: AttributeValue): number {
  if (value.S !== undefined) return [...value.S].length;
  if (value.B !== undefined) return Buffer.byteLength(value.B, 'base64');
  const collection = value.L ?? value.SS ?? value.NS ?? value.BS ?? (value.M && Object.keys(value.M));
  if (collection) return collection.length;
  throw validation(
    'Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: size',
  );
}

export function evaluate(condition: Condition, item: Item, ctx: Placeholders): boolean {
  switch (condition.kind) {
    case 'and':
      return evaluate(condition.left, item, ctx) && evaluate(condition.right, item, ctx);
    case 'or':
      return evaluate(condition.left, item, ctx) || evaluate(condition.right, item, ctx);
    case 'not':
      return !evaluate(condition.operand, item, ctx);
    case 'compare': {
      const left = operandValue(condition.left, item, ctx);
      const right = operandValue(condition.right, item, ctx);
      if (condition.op === '<>')
        return left === undefined || right === undefined || !equalValues(left, right);
      if (left === undefined || right === undefined) return false;
      if (condition.op === '=') return equalValues(left, right);
      const order = compareScalars(left, right);
      if (order === undefined) return false;
      return condition.op === '<'
        ? order < 0
        : condition.op === '<='
          ? order <= 0
          : condition.op === '>'
            ? order > 0
            : order >= 0;
    }
    case 'between': {
      const value = operandValue(condition.operand, item, ctx);
      const low = operandValue(condition.low, item, ctx);
      const high = operandValue(condition.high, item, ctx);
      if (value === undefined || low === undefined || high === undefined) return false;
      const a = compareScalars(value, low);
      const b = compareScalars(value, high);
      return a !== undefined && b !== undefined && a >= 0 && b <= 0;
    }
    case 'in': {
      const value = operandValue(condition.operand, item, ctx);
      if (value === undefined) return false;
      return condition.list.some((option) => {
        const candidate = operandValue(option, item, ctx);
        return candidate !== undefined && equalValues(value, candidate);
      });
    }
    case 'function':
      return callFunction(condition.name, condition.args, item, ctx);
  }
}

function callFunction(name: string, args: Operand[], item: Item, ctx: Placeholders): boolean {
  const subject = operandValue(args[0]!, item, ctx);
  switch (name) {
    case 'attribute_exists':
      return subject !== undefined;
    case 'attribute_not_exists':
      return subject === undefined;
    case 'attribute_type': {
      const type = operandValue(args[1]!, item, ctx);
      const valid = ['S', 'N', 'B', 'BOOL', 'NULL', 'L', 'M', 'SS', 'NS', 'BS'];
      if (type?.S === undefined || !valid.includes(type.S)) {
        throw validation(
          `Invalid ConditionExpression: Invalid attribute type name found; type: ${type?.S ?? '?'}, valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}`,
        );
      }
      return subject !== undefined && typeOf(subject) === type.S;
    }
    case 'begins_with': {
      const prefix = operandValue(args[1]!, item, ctx);
      if (subject === undefined || prefix === undefined) return false;
      if (subject.S !== undefined && prefix.S !== undefined) return subject.S.startsWith(prefix.S);
      if (subject.B !== undefined && prefix.B !== undefined) {
        return Buffer.from(subject.B, 'base64')
          .subarray(0, Buffer.byteLength(prefix.B, 'base64'))
          .equals(Buffer.from(prefix.B, 'base64'));
      }
      return false;
    }
    case 'contains': {
      const needle = operandValue(args[1]!, item, ctx);
      if (subject === undefined || needle === undefined) return false;
      if (subject.S !== undefined) return needle.S !== undefined && subject.S.includes(needle.S);
      if (subject.SS !== undefined) return needle.S !== undefined && subject.SS.includes(needle.S);
      if (subject.NS !== undefined)
        return needle.N !== undefined && subject.NS.some((n) => equalValues({ N: n }, needle));
      if (subject.BS !== undefined) return needle.B !== undefined && subject.BS.includes(needle.B);
      if (subject.L !== undefined) return subject.L.some((element) => equalValues(element, needle));
      return false;
    }
  }
  return false;
}

// --- Key conditions ----------------------------------------------------------------------------

/** A Query's key condition: the partition key's value and, optionally, a range on the sort key. */
export interface KeyRange {
  partition: AttributeValue;
  sort?:
    | { op: '=' | '<' | '<=' | '>' | '>='; value: AttributeValue }
    | { op: 'between'; low: AttributeValue; high: AttributeValue }
    | { op: 'begins_with'; value: AttributeValue };
}

export function keyRange(
  parsed: Parsed<Condition>,
  ctx: Placeholders,
  hashKey: string,
  rangeKey: string | undefined,
): KeyRange {
  const parts: Condition[] = [];
  const flatten = (c: Condition) => {
    if (c.kind === 'and') {
      flatten(c.left);
      flatten(c.right);
    } else parts.push(c);
  };
  flatten(parsed.tree);
  const unsupported = () =>
    validation(`Invalid operator used in KeyConditionExpression: ${parts.map((p) => p.kind).join(', ')}`);
  const keyName = (operand: Operand): string | undefined => {
    if (operand.kind !== 'path' || operand.elements.length !== 1) return undefined;
    return resolvePath(operand, ctx)[0] as string;
  };
  const value = (operand: Operand): AttributeValue => {
    if (operand.kind !== 'value') throw unsupported();
    return ctx.values[operand.name]!;
  };
  let partition: AttributeValue | undefined;
  let sort: KeyRange['sort'];
  if (parts.length > 2) throw validation('Conditions can be of length 1 or 2 only');
  for (const part of parts) {
    if (part.kind === 'compare') {
      const name = keyName(part.left);
      if (name === undefined) throw unsupported();
      if (name === hashKey) {
        if (part.op !== '=') throw validation('Query key condition not supported');
        partition = value(part.right);
      } else if (name === rangeKey) {
        if (part.op === '<>')
          throw validation('Unsupported operator on KeyConditionExpression: operator: <>');
        sort = { op: part.op, value: value(part.right) };
      } else {
        throw validation(`Query condition missed key schema element: ${hashKey}`);
      }
    } else if (part.kind === 'between' && keyName(part.operand) === rangeKey) {
      const low = value(part.low);
      const high = value(part.high);
      if ((compareScalars(low, high) ?? 0) > 0) {
        throw validation(
          'Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound',
        );
      }
      sort = { op: 'between', low, high };
    } else if (
      part.kind === 'function' &&
      part.name === 'begins_with' &&
      keyName(part.args[0]!) === rangeKey
    ) {
      sort = { op: 'begins_with', value: value(part.args[1]!) };
    } else {
      throw unsupported();
    }
  }
  if (!partition) throw validation(`Query condition missed key schema element: ${hashKey}`);
  return sort ? { partition, sort } : { partition };
}

// --- Projections -------------------------------------------------------------------------------

/**
 * The item with only the projected paths. Nested maps keep their shape; list elements named by
 * index are gathered in the order asked (DynamoDB returns them compacted the same way).
 */
export function project(item: Item, paths: readonly ResolvedPath[]): Item {
  const out: Item = {};
  for (const path of paths) {
    const value = getPath(item, path);
    if (value === undefined) continue;
    const top = path[0] as string;
    if (path.length === 1) {
      out[top] = value;
      continue;
    }
    const fresh = (next: string | number): AttributeValue =>
      typeof next === 'number' ? { L: [] } : { M: {} };
    out[top] ??= fresh(path[1]!);
    let container = out[top]!;
    for (let i = 1; i < path.length - 1; i++) {
      const element = path[i]!;
      const child = fresh(path[i + 1]!);
      if (container.M) container = container.M[element as string] ??= child;
      else {
        container.L!.push(child);
        container = child;
      }
    }
    const last = path[path.length - 1]!;
    if (container.M) container.M[last as string] = value;
    else container.L!.push(value);
  }
  return out;
}

// --- Updates -----------------------------------------------------------------------------------

/**
 * Applies an update expression to an item (a copy: the stored item is never changed in place)
 * and returns the new item and the paths it touched. Every right-hand side is
 * evaluated against the item as it was before the update, as DynamoDB does.
 */
export function applyUpdate(
  parsed: Parsed<UpdateActions>,
  before: Item,
  ctx: Placeholders,
  keyNames: readonly string[],
): { item: Item; touched: ResolvedPath[] } {
  const actions = parsed.tree;
  const paths: ResolvedPath[] = [];
  const all = [
    ...actions.set.map((a) => a.path),
    ...actions.remove,
    ...actions.add.map((a) => a.path),
    ...actions.delete.map((a) => a.path),
  ].map((p) => resolvePath(p, ctx));
  for (const path of all) {
    const top = path[0] as string;
    if (keyNames.includes(top))
      throw validation(
        `One or more parameter values were invalid: Cannot update attribute ${top}. This attribute is part of the key`,
      );
    for (const other of paths) {
      if (overlaps(path, other)) {
        throw validation(
          `Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [${other.join(', ')}], path two: [${path.join(', ')}]`,
        );
      }
    }
    paths.push(path);
  }

  const item: Item = { ...before };
  const sets = actions.set.map((a) => ({
    path: resolvePath(a.path, ctx),
    value: setValue(a.value, before, ctx),
  }));
  for (const { path, value } of sets) assign(item, path, value);
  for (const path of actions.remove.map((p) => resolvePath(p, ctx))) remove(item, path);
  for (const action of actions.add) {
    const path = resolvePath(action.path, ctx);
    const given = ctx.values[action.value.name]!;
    const current = getPath(before, path);
    if (given.N !== undefined) {
      if (current !== undefined && current.N === undefined) throw incorrectType('ADD');
      assign(item, path, { N: addNumbers(current?.N ?? '0', given.N) });
    } else if (given.SS || given.NS || given.BS) {
      const type = typeOf(given) as 'SS' | 'NS' | 'BS';
      if (current !== undefined && current[type] === undefined) throw incorrectType('ADD');
      const union = [...(current?.[type] ?? [])];
      for (const member of given[type]!) if (!union.includes(member)) union.push(member);
      assign(item, path, { [type]: union });
    } else {
      throw incorrectType('ADD');
    }
  }
  for (const action of actions.delete) {
    const path = resolvePath(action.path, ctx);
    const given = ctx.values[action.value.name]!;
    const type = typeOf(given);
    if (type !== 'SS' && type !== 'NS' && type !== 'BS') throw incorrectType('DELETE');
    const current = getPath(before, path);
    if (current === undefined) continue;
    if (current[type] === undefined) throw incorrectType('DELETE');
    const rest = current[type]!.filter((member) => !given[type]!.includes(member));
    if (rest.length === 0) remove(item, path);
    else assign(item, path, { [type]: rest });
  }
  return { item, touched: paths };
}

function incorrectType(_operator: string) {
  return validation('An operand in the update expression has an incorrect data type');
}

function overlaps(a: ResolvedPath, b: ResolvedPath): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

function setValue(value: SetValue, before: Item, ctx: Placeholders): AttributeValue {
  if (value.kind === 'arithmetic') {
    const left = setOperand(value.left, before, ctx);
    const right = setOperand(value.right, before, ctx);
    if (left?.N === undefined || right?.N === undefined) {
      if (left === undefined || right === undefined) {
        throw validation('The provided expression refers to an attribute that does not exist in the item');
      }
      throw incorrectType(value.op);
    }
    return { N: addNumbers(left.N, right.N, value.op === '-') };
  }
  const result = setOperand(value, before, ctx);
  if (result === undefined)
    throw validation('The provided expression refers to an attribute that does not exist in the item');
  return result;
}

function setOperand(operand: SetOperand, before: Item, ctx: Placeholders): AttributeValue | undefined {
  switch (operand.kind) {
    case 'value':
      return ctx.values[operand.name];
    case 'path':
      return getPath(before, resolvePath(operand, ctx));
    case 'if_not_exists':
      return getPath(before, resolvePath(operand.path, ctx)) ?? setOperand(operand.value, before, ctx);
    case 'list_append': {
      const first = setOperand(operand.first, before, ctx);
      const second = setOperand(operand.second, before, ctx);
      if (first?.L === undefined || second?.L === undefined) throw incorrectType('list_append');
      return { L: [...first.L, ...second.L] };
    }
  }
}

/** Sets a path, copying the containers on the way (the stored item's values are shared, never changed). */
function assign(item: Item, path: ResolvedPath, value: AttributeValue): void {
  if (path.length === 1) {
    item[path[0] as string] = value;
    return;
  }
  const top = path[0] as string;
  if (item[top] === undefined) throw invalidPath();
  item[top] = copyAlong(item[top]!, path.slice(1), (container, last) => {
    if (typeof last === 'number') {
      if (!container.L) throw invalidPath();
      if (last >= container.L.length) container.L.push(value);
      else container.L[last] = value;
    } else {
      if (!container.M) throw invalidPath();
      container.M[last] = value;
    }
  });
}

function remove(item: Item, path: ResolvedPath): void {
  if (path.length === 1) {
    delete item[path[0] as string];
    return;
  }
  const top = path[0] as string;
  if (item[top] === undefined) return;
  item[top] = copyAlong(item[top]!, path.slice(1), (container, last) => {
    if (typeof last === 'number') container.L?.splice(last, 1);
    else if (container.M) delete container.M[last];
  });
}

function copyAlong(
  value: AttributeValue,
  rest: ResolvedPath,
  change: (container: AttributeValue, last: string | number) => void,
): AttributeValue {
  const copy: AttributeValue = value.L ? { L: [...value.L] } : value.M ? { M: { ...value.M } } : { ...value };
  const element = rest[0]!;
  if (rest.length === 1) {
    change(copy, element);
    return copy;
  }
  const child = typeof element === 'number' ? copy.L?.[element] : copy.M?.[element];
  if (child === undefined) throw invalidPath();
  const changed = copyAlong(child, rest.slice(1), change);
  if (typeof element === 'number') copy.L![element] = changed;
  else copy.M![element] = changed;
  return copy;
}

function invalidPath() {
  return validation('The document path provided in the update expression is invalid for update');
}
