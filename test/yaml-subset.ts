/**
 * A reader of the YAML that action.yml is written in, for its test (no YAML parser is a
 * dependency of the project): block mappings, block sequences, `|` and `>-` block scalars, plain
 * and quoted scalars, comments on lines of their own. Anything beyond that subset (flow
 * collections, anchors, tags, tabs, a key given twice, a line it cannot place) throws, so the
 * test fails rather than reading the file wrongly.
 */

export type YamlValue = string | YamlValue[] | { [key: string]: YamlValue };

interface Line {
  indent: number;
  text: string;
  number: number;
}

function scalar(raw: string, number: number): string {
  const text = raw.trim();
  if (/^'.*'$/.test(text)) return text.slice(1, -1).replaceAll("''", "'");
  if (/^".*"$/.test(text)) return JSON.parse(text) as string;
  if (/^[[{&*!|>%@`]/.test(text) || /\s#/.test(text))
    throw new Error(`line ${number}: outside the YAML this reader knows: ${text}`);
  return text;
}

export function readYaml(source: string): YamlValue {
  if (source.includes('\t')) throw new Error('tabs are outside the YAML this reader knows');
  const all = source.split('\n').map((text, i) => ({
    indent: text.length - text.trimStart().length,
    text: text.trimEnd(),
    number: i + 1,
  }));
  let pos = 0;

  /** The lines of a block scalar: those indented deeper than `parent` (or blank). */
  function blockScalar(parent: number, folded: boolean): string {
    const lines: Line[] = [];
    while (pos < all.length && (all[pos]!.text.trim() === '' || all[pos]!.indent > parent))
      lines.push(all[pos++]!);
    while (lines.length > 0 && lines.at(-1)!.text.trim() === '') lines.pop();
    const indent = Math.min(...lines.filter((l) => l.text.trim() !== '').map((l) => l.indent));
    const body = lines.map((l) => l.text.slice(indent));
    return folded ? body.join(' ') : `${body.join('\n')}\n`;
  }

  const skipBlank = () => {
    while (pos < all.length && (all[pos]!.text.trim() === '' || all[pos]!.text.trim().startsWith('#'))) pos++;
  };

  /** What follows a `key:` or a `- `: an inline scalar, a block scalar, or a nested block. */
  function valueAfter(rest: string, indent: number, number: number): YamlValue {
    if (rest === '|') return blockScalar(indent, false);
    if (rest === '>-') return blockScalar(indent, true);
    if (rest !== '') return scalar(rest, number);
    skipBlank();
    if (pos >= all.length || all[pos]!.indent <= indent)
      throw new Error(`line ${number}: a key with no value is outside the YAML this reader knows`);
    return block(all[pos]!.indent);
  }

  function mapping(indent: number, first?: { key: string; rest: string; number: number }): YamlValue {
    const map: Record<string, YamlValue> = {};
    const put = (key: string, rest: string, number: number, childIndent: number) => {
      if (key in map) throw new Error(`line ${number}: key ${key} twice`);
      map[key] = valueAfter(rest, childIndent, number);
    };
    if (first) put(first.key, first.rest, first.number, indent);
    for (;;) {
      skipBlank();
      const line = all[pos];
      if (!line || line.indent < indent) return map;
      if (line.indent > indent) throw new Error(`line ${line.number}: indented where no block starts`);
      const m = /^([\w.-]+):(?: (.*))?$/.exec(line.text.trim());
      if (!m) throw new Error(`line ${line.number}: not a key: ${line.text.trim()}`);
      pos++;
      put(m[1]!, (m[2] ?? '').trim(), line.number, indent);
    }
  }

  function sequence(indent: number): YamlValue {
    const list: YamlValue[] = [];
    for (;;) {
      skipBlank();
      const line = all[pos];
      if (!line || line.indent < indent) return list;
      if (line.indent > indent || !line.text.trim().startsWith('- '))
        throw new Error(`line ${line.number}: expected an item of the list`);
      pos++;
      const rest = line.text.trim().slice(2);
      const m = /^([\w.-]+):(?: (.*))?$/.exec(rest);
      // `- key: value` opens a mapping whose keys sit two columns in.
      list.push(
        m
          ? mapping(indent + 2, { key: m[1]!, rest: (m[2] ?? '').trim(), number: line.number })
          : scalar(rest, line.number),
      );
    }
  }

  function block(indent: number): YamlValue {
    return all[pos]!.text.trim().startsWith('- ') ? sequence(indent) : mapping(indent);
  }

  skipBlank();
  const root = block(0);
  skipBlank();
  if (pos < all.length) throw new Error(`line ${all[pos]!.number}: left unread`);
  return root;
}
