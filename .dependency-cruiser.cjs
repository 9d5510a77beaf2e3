/**
 * The layers of Assay, bottom to top; each imports only the layers below it (type imports
 * included). docs/architecture.md draws the same tree. `npm run check` runs this; an upward
 * import or a cycle fails CI.
 */
const LAYERS = [
  ['model', '^shared/model/'],
  ['ports', '^shared/ports/'],
  ['lib', '^shared/lib/'],
  ['family', '^shared/family/'],
  ['families', '^shared/families/'],
  ['registry', '^shared/registry/'],
  ['reports', '^shared/reports/'],
  ['sweeps', '^shared/sweeps/'],
  ['use-cases', '^shared/use-cases/'],
];
const SHELLS = '^(cli|functions|bench|infra)/';

/**
 * Inside the pure libraries, folders depend one way too: the AWS layout, metrics and datasets
 * on nothing else of lib, prompts on the layout (where prompt files sit in the bucket),
 * providers on metrics, encoders on providers; lib's own files (gate grammar, formatting) sit
 * on top of its folders.
 */
const LIB_MAY_IMPORT = {
  layout: [],
  datasets: [],
  metrics: [],
  prompts: ['layout'],
  providers: ['metrics'],
  encoders: ['providers', 'metrics'],
};
function libOrder() {
  return Object.entries(LIB_MAY_IMPORT).map(([folder, allowed]) => ({
    name: `lib-${folder}-imports-only-${allowed.join('-') || 'model-and-ports'}`,
    severity: 'error',
    from: { path: `^shared/lib/${folder}/` },
    to: {
      path: '^shared/lib/',
      pathNot: [`^shared/lib/${folder}/`, ...allowed.map((a) => `^shared/lib/${a}/`)],
    },
  }));
}

const upward = LAYERS.map(([name, path], i) => ({
  name: `${name}-imports-upward`,
  comment: `${name} may import only the layers below it: ${
    LAYERS.slice(0, i)
      .map(([n]) => n)
      .join(', ') || 'none'
  }`,
  severity: 'error',
  from: { path },
  to: { path: [...LAYERS.slice(i + 1).map(([, p]) => p), '^shared/adapters/', SHELLS] },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycle, type imports included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...upward,
    {
      name: 'adapters-import-model-ports-lib-only',
      comment: 'An adapter implements a port with the model, the ports and the pure libraries only.',
      severity: 'error',
      from: { path: '^shared/adapters/' },
      to: { path: ['^shared/(family|families|registry|reports|sweeps|use-cases)/', SHELLS] },
    },
    {
      name: 'adapters-stay-in-their-vendor',
      comment: 'The local and the AWS adapters do not import each other.',
      severity: 'error',
      from: { path: '^shared/adapters/(local|aws)/' },
      to: { path: '^shared/adapters/(?!$1/)' },
    },
    {
      name: 'families-are-independent',
      comment: 'A task family does not import another; shared machinery goes in shared/family/.',
      severity: 'error',
      from: { path: '^shared/families/([^/]+)/' },
      to: { path: '^shared/families/(?!$1/)' },
    },
    ...libOrder(),
    {
      name: 'shared-does-not-import-shells',
      severity: 'error',
      from: { path: '^shared/' },
      to: { path: SHELLS },
    },
    {
      name: 'functions-do-not-import-the-cli',
      comment:
        'Lambda handlers are a shell of their own; the CLI may run them (the local cloud), not the reverse.',
      severity: 'error',
      from: { path: '^functions/' },
      to: { path: '^cli/' },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|infra/cdk\\.out)' },
    includeOnly: '^(shared|cli|functions|bench|infra)/',
  },
};
