/**
 * A strict reader of the XML the CI reports write, for the tests (no XML parser is a dependency):
 * one prolog, elements with quoted attributes, text, the five named entities and character
 * references. Anything else — an unknown entity, a bare `&` or `<`, an unquoted or repeated
 * attribute, a character XML 1.0 cannot hold, a tag closed out of order, text or a second element
 * after the root — throws, saying where. It gives the tree back with entities resolved.
 */

export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  /** The element's own text (its children's left out), entities resolved. */
  text: string;
}

const NAME = /^[A-Za-z_][\w.-]*/;
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Whether a code point is a character XML 1.0 allows. */
function allowed(cp: number): boolean {
  return (
    cp === 0x9 ||
    cp === 0xa ||
    cp === 0xd ||
    (cp >= 0x20 && cp <= 0xd7ff) ||
    (cp >= 0xe000 && cp <= 0xfffd) ||
    (cp >= 0x10000 && cp <= 0x10ffff)
  );
}

function resolveText(raw: string, at: number): string {
  if (/[<]/.test(raw)) throw new Error(`XML: '<' in text or an attribute at ${at}`);
  return raw.replace(/&([^;]*);|&/g, (match, ref: string | undefined) => {
    if (ref === undefined) throw new Error(`XML: a bare '&' at ${at}`);
    if (ref in ENTITIES) return ENTITIES[ref]!;
    const numeric = /^#(?:x([0-9a-fA-F]+)|([0-9]+))$/.exec(ref);
    if (!numeric) throw new Error(`XML: unknown entity &${ref}; at ${at}`);
    const cp = numeric[1] ? Number.parseInt(numeric[1], 16) : Number(numeric[2]);
    if (!allowed(cp)) throw new Error(`XML: a reference to a character XML cannot hold (${match}) at ${at}`);
    return String.fromCodePoint(cp);
  });
}

export function parseXml(xml: string): XmlElement {
  for (let i = 0; i < xml.length; i++) {
    const cp = xml.codePointAt(i)!;
    if (cp > 0xffff) i++;
    else if (cp >= 0xd800 && cp <= 0xdfff) throw new Error(`XML: a lone surrogate at ${i}`);
    if (!allowed(cp)) throw new Error(`XML: character U+${cp.toString(16)} at ${i} is not allowed`);
  }
  const prolog = /^<\?xml version="1\.0" encoding="UTF-8"\?>\n?/.exec(xml);
  if (!prolog) throw new Error('XML: no prolog');
  let pos = prolog[0].length;
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  while (pos < xml.length) {
    const lt = xml.indexOf('<', pos);
    const raw = xml.slice(pos, lt < 0 ? xml.length : lt);
    const text = resolveText(raw, pos);
    const top = stack.at(-1);
    if (top) top.text += text;
    else if (text.trim() !== '') throw new Error(`XML: text outside the root at ${pos}`);
    if (lt < 0) break;
    pos = lt;
    if (xml.startsWith('</', pos)) {
      const close = /^<\/([A-Za-z_][\w.-]*)\s*>/.exec(xml.slice(pos));
      if (!close) throw new Error(`XML: a malformed closing tag at ${pos}`);
      const open = stack.pop();
      if (!open || open.name !== close[1])
        throw new Error(`XML: </${close[1]}> closes ${open ? `<${open.name}>` : 'nothing'} at ${pos}`);
      pos += close[0].length;
      continue;
    }
    pos += 1;
    const name = NAME.exec(xml.slice(pos));
    if (!name) throw new Error(`XML: a malformed tag at ${pos}`);
    pos += name[0].length;
    const element: XmlElement = { name: name[0], attributes: {}, children: [], text: '' };
    for (;;) {
      const space = /^\s*/.exec(xml.slice(pos))![0];
      pos += space.length;
      if (xml.startsWith('/>', pos) || xml.startsWith('>', pos)) break;
      if (space === '') throw new Error(`XML: no space before an attribute at ${pos}`);
      const attr = /^([A-Za-z_][\w.:-]*)="([^"]*)"/.exec(xml.slice(pos));
      if (!attr) throw new Error(`XML: a malformed attribute at ${pos}`);
      if (attr[1]! in element.attributes) throw new Error(`XML: attribute ${attr[1]} twice at ${pos}`);
      element.attributes[attr[1]!] = resolveText(attr[2]!, pos);
      pos += attr[0].length;
    }
    const parent = stack.at(-1);
    if (parent) parent.children.push(element);
    else if (root) throw new Error(`XML: a second root element at ${pos}`);
    else root = element;
    if (xml.startsWith('/>', pos)) pos += 2;
    else {
      pos += 1;
      stack.push(element);
    }
  }
  if (stack.length > 0) throw new Error(`XML: <${stack.at(-1)!.name}> is never closed`);
  if (!root) throw new Error('XML: no root element');
  return root;
}

/** The elements named `name` anywhere below `element`, in document order. */
export function allNamed(element: XmlElement, name: string): XmlElement[] {
  return element.children.flatMap((child) => [
    ...(child.name === name ? [child] : []),
    ...allNamed(child, name),
  ]);
}
