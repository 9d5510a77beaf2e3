/**
 * The arithmetic a formula check combines its checks' scores with (OpenAI Evals' `multi`
 * grader's `calculate_output`): numbers, the checks' names, + - * / ^ and parentheses, and the
 * functions min, max, abs, floor, ceil, sqrt, exp and log. Parsed once by recursive descent,
 * never evaluated as code.
 */
import { InputError } from '../../model/errors.js';

export class FormulaError extends InputError {
  override readonly name = 'FormulaError';
}

type Node =
  | { op: 'num'; value: number }
  | { op: 'var'; name: string }
  | { op: 'neg'; arg: Node }
  | { op: '+' | '-' | '*' | '/' | '^'; left: Node; right: Node }
  | { op: 'call'; fn: string; args: Node[] };

const FUNCTIONS: Record<string, (...args: number[]) => number> = {
  min: Math.min,
  max: Math.max,
  abs: Math.abs,
  floor: Math.floor,
  ceil: Math.ceil,
  sqrt: Math.sqrt,
  exp: Math.exp,
  log: Math.log,
};

const TOKEN = /\s*(?:(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\S))/y;

/** A formula, parsed; its names must be among `names`. */
export function parseFormula(
  source: string,
  names: readonly string[],
): (scores: Record<string, number>) => number {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(source); m; m = TOKEN.exec(source)) tokens.push(m[1] ?? m[2] ?? m[3]!);
  if (tokens.length === 0) throw new FormulaError(`formula ${JSON.stringify(source)} is empty`);
  let at = 0;
  const fail = (what: string): never => {
    throw new FormulaError(`formula ${JSON.stringify(source)}: ${what}`);
  };
  const peek = () => tokens[at];
  const take = (want?: string) => {
    const token = tokens[at];
    if (token === undefined) fail(want ? `expected ${want} at the end` : 'ends too early');
    if (want !== undefined && token !== want) fail(`expected ${want}, found ${token}`);
    at += 1;
    return token!;
  };
  const primary = (): Node => {
    const token = take();
    if (token === '(') {
      const inner = sum();
      take(')');
      return inner;
    }
    if (token === '-') return { op: 'neg', arg: primary() };
    if (/^[\d.]/.test(token)) return { op: 'num', value: Number(token) };
    if (/^[A-Za-z_]/.test(token)) {
      if (peek() === '(') {
        if (!(token in FUNCTIONS))
          fail(`unknown function ${token} (known: ${Object.keys(FUNCTIONS).join(', ')})`);
        take('(');
        const args = [sum()];
        while (peek() === ',') {
          take(',');
          args.push(sum());
        }
        take(')');
        return { op: 'call', fn: token, args };
      }
      if (!names.includes(token)) fail(`${token} is not one of the checks (${names.join(', ')})`);
      return { op: 'var', name: token };
    }
    return fail(`unexpected ${token}`);
  };
  // `^` binds tighter than * and /, and to the right: 2 ^ 3 ^ 2 is 2 ^ 9.
  const power = (): Node => {
    const base = primary();
    if (peek() !== '^') return base;
    take('^');
    return { op: '^', left: base, right: power() };
  };
  const product = (): Node => {
    let left = power();
    while (peek() === '*' || peek() === '/') {
      const op = take() as '*' | '/';
      left = { op, left, right: power() };
    }
    return left;
  };
  const sum = (): Node => {
    let left = product();
    while (peek() === '+' || peek() === '-') {
      const op = take() as '+' | '-';
      left = { op, left, right: product() };
    }
    return left;
  };
  const tree = sum();
  if (at < tokens.length) fail(`unexpected ${tokens[at]}`);
  const evaluate = (node: Node, scores: Record<string, number>): number => {
    switch (node.op) {
      case 'num':
        return node.value;
      case 'var':
        return scores[node.name]!;
      case 'neg':
        return -evaluate(node.arg, scores);
      case 'call':
        return FUNCTIONS[node.fn]!(...node.args.map((a) => evaluate(a, scores)));
      default: {
        const [l, r] = [evaluate(node.left, scores), evaluate(node.right, scores)];
        if (node.op === '^') return l ** r;
        return node.op === '+' ? l + r : node.op === '-' ? l - r : node.op === '*' ? l * r : l / r;
      }
    }
  };
  return (scores) => evaluate(tree, scores);
}
