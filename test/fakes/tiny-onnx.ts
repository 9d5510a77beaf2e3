/**
 * Builds tiny but real ONNX models in a folder laid out like a Hugging Face ONNX export
 * (tokenizer.json, tokenizer_config.json, config.json, onnx/model.onnx), so the loading code
 * runs onnxruntime for real without a model hub. The ONNX protobuf is written by hand: a
 * handful of message types is all a graph of Gather, Cast, Unsqueeze, Mul and ReduceMean needs.
 *
 * - embedder: token states = embedding(input_ids) · attention_mask (the output
 *   `last_hidden_state`, [batch, tokens, size]); pooling is the loader's job.
 * - NLI: logits = mean over tokens of a 3-column embedding (`logits`, [batch, 3]), with
 *   `id2label` in config.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

// --- protobuf, just enough -------------------------------------------------------------------

type Field = Uint8Array;

function varint(value: number | bigint): number[] {
  let v = BigInt(value);
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return out;
}

const concat = (parts: readonly Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

const int = (field: number, value: number | bigint): Field =>
  Uint8Array.from([...varint(field << 3), ...varint(value)]);
const bytes = (field: number, value: Uint8Array): Field =>
  concat([Uint8Array.from([...varint((field << 3) | 2), ...varint(value.length)]), value]);
const str = (field: number, value: string): Field => bytes(field, new TextEncoder().encode(value));
const msg = (field: number, ...fields: Field[]): Field => bytes(field, concat(fields));

// --- ONNX messages ---------------------------------------------------------------------------

const FLOAT = 1;
const INT64 = 7;

function tensor(name: string, dims: number[], type: number, data: ArrayBufferView): Field {
  return msg(
    5, // GraphProto.initializer
    ...dims.map((d) => int(1, d)),
    int(2, type),
    str(8, name),
    bytes(9, new Uint8Array(data.buffer, data.byteOffset, data.byteLength)),
  );
}

function valueInfo(field: number, name: string, type: number, dims: (number | string)[]): Field {
  const dim = (d: number | string) => msg(1, typeof d === 'number' ? int(1, d) : str(2, d));
  return msg(field, str(1, name), msg(2, msg(1, int(1, type), msg(2, ...dims.map(dim)))));
}

interface Attr {
  name: string;
  ints?: number[];
  int?: number;
}

function node(op: string, inputs: string[], outputs: string[], attrs: Attr[] = []): Field {
  return msg(
    1, // GraphProto.node
    ...inputs.map((i) => str(1, i)),
    ...outputs.map((o) => str(2, o)),
    str(3, `${op}_${outputs[0]}`),
    str(4, op),
    ...attrs.map((a) =>
      msg(
        5,
        str(1, a.name),
        ...(a.ints ? [int(20, 7), ...a.ints.map((i) => int(8, i))] : [int(20, 2), int(3, a.int ?? 0)]),
      ),
    ),
  );
}

function model(graph: Field[]): Uint8Array {
  return concat([
    int(1, 8), // ir_version
    str(2, 'assay-tests'),
    msg(8, str(1, ''), int(2, 13)), // opset_import: ai.onnx 13
    msg(7, str(2, 'tiny'), ...graph),
  ]);
}

/** Token states masked by the attention mask: the graph both tiny models start with. */
function maskedStates(table: Float32Array, vocab: number, size: number): Field[] {
  return [
    tensor('table', [vocab, size], FLOAT, table),
    tensor('axis2', [1], INT64, BigInt64Array.from([2n])),
    node('Gather', ['table', 'input_ids'], ['states']),
    node('Cast', ['attention_mask'], ['mask_f'], [{ name: 'to', int: FLOAT }]),
    node('Unsqueeze', ['mask_f', 'axis2'], ['mask_3d']),
    node('Mul', ['states', 'mask_3d'], ['masked']),
    valueInfo(11, 'input_ids', INT64, ['batch', 'tokens']),
    valueInfo(11, 'attention_mask', INT64, ['batch', 'tokens']),
  ];
}

// --- the tokenizer -----------------------------------------------------------------------------

export const TINY_VOCAB = [
  '[PAD]',
  '[UNK]',
  '[CLS]',
  '[SEP]',
  'the',
  'court',
  'ruled',
  'rule',
  'did',
  'not',
  'marbury',
  'sued',
  'madison',
  '.',
];

function tokenizerJson(): unknown {
  const special = (content: string, id: number) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  });
  const token = (id: string, type_id: number) => ({ SpecialToken: { id, type_id } });
  const seq = (id: string, type_id: number) => ({ Sequence: { id, type_id } });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: ['[PAD]', '[UNK]', '[CLS]', '[SEP]'].map((t, i) => special(t, i)),
    normalizer: {
      type: 'BertNormalizer',
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [token('[CLS]', 0), seq('A', 0), token('[SEP]', 0)],
      pair: [token('[CLS]', 0), seq('A', 0), token('[SEP]', 0), seq('B', 1), token('[SEP]', 1)],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [2], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [3], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(TINY_VOCAB.map((t, i) => [t, i])),
    },
  };
}

async function writeFolder(folder: string, onnx: Uint8Array, config: Record<string, unknown>) {
  await mkdir(join(folder, 'onnx'), { recursive: true });
  await writeFile(join(folder, 'onnx', 'model.onnx'), onnx);
  await writeFile(join(folder, 'tokenizer.json'), JSON.stringify(tokenizerJson()));
  await writeFile(
    join(folder, 'tokenizer_config.json'),
    JSON.stringify({ pad_token: '[PAD]', do_lower_case: true, model_max_length: 512 }),
  );
  await writeFile(join(folder, 'config.json'), JSON.stringify(config));
}

/** The embedder's table: row i is token i's 4-dimensional state (exported for hand computation). */
export function tinyEmbeddingTable(): number[][] {
  return TINY_VOCAB.map((_, i) => [Math.sin(i + 1), Math.cos(2 * i + 1), (i % 3) - 1, i / 10]);
}

export async function writeTinyEmbedder(folder: string): Promise<string> {
  const rows = tinyEmbeddingTable();
  const graph = [
    ...maskedStates(Float32Array.from(rows.flat()), rows.length, 4),
    node('Identity', ['masked'], ['last_hidden_state']),
    valueInfo(12, 'last_hidden_state', FLOAT, ['batch', 'tokens', 4]),
  ];
  await writeFolder(folder, model(graph), { model_type: 'bert' });
  return folder;
}

/**
 * The NLI model: contradiction is class 0 (as some MNLI exports order them), and the token
 * `not` pushes towards it; every other word towards entailment (class 2).
 */
export async function writeTinyNli(folder: string): Promise<string> {
  const rows = TINY_VOCAB.map((t) =>
    t === 'not' ? [40, 0, 0] : t.startsWith('[') ? [0, 0.5, 0] : [0, 0, 1],
  );
  const graph = [
    ...maskedStates(Float32Array.from(rows.flat()), rows.length, 3),
    node(
      'ReduceMean',
      ['masked'],
      ['logits'],
      [
        { name: 'axes', ints: [1] },
        { name: 'keepdims', int: 0 },
      ],
    ),
    valueInfo(12, 'logits', FLOAT, ['batch', 3]),
  ];
  await writeFolder(folder, model(graph), {
    model_type: 'deberta-v2',
    id2label: { '0': 'CONTRADICTION', '1': 'NEUTRAL', '2': 'ENTAILMENT' },
  });
  return folder;
}
