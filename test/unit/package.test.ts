/** What the package promises about itself: the optional ONNX runtime is named when missing, at the version it pins. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { suiteNameFor } from '../../cli/init.js';
import { ONNX_RUNTIME_INSTALL, runtimeLoadMessage } from '../../shared/lib/encoders/onnx.js';
import { REPO } from '../helpers.js';

const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};

describe('onnxruntime-node, an optional peer', () => {
  it('is not installed with Assay, and the install command names the version package.json pins', () => {
    expect(pkg.dependencies['onnxruntime-node']).toBeUndefined();
    expect(pkg.peerDependenciesMeta['onnxruntime-node']?.optional).toBe(true);
    const version = pkg.peerDependencies['onnxruntime-node'];
    expect(pkg.devDependencies['onnxruntime-node']).toBe(version);
    expect(ONNX_RUNTIME_INSTALL).toBe(`npm install onnxruntime-node@${version}`);
  });

  it('a missing runtime is reported as missing, with what to install; another load failure keeps its cause', () => {
    const missing = Object.assign(new Error("Cannot find package 'onnxruntime-node'"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    expect(runtimeLoadMessage(missing)).toBe(
      `local ONNX encoders (onnx:…) need onnxruntime-node, which is not installed: run \`${ONNX_RUNTIME_INSTALL}\` where Assay is installed (with -g for a global Assay); on AWS Lambda, a layer must provide it`,
    );
    const depMissing = Object.assign(new Error("Cannot find package 'onnxruntime-common' imported from x"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    expect(runtimeLoadMessage(depMissing)).toContain(
      "could not be loaded (Cannot find package 'onnxruntime-common'",
    );
    const broken = new Error('libonnxruntime.so.1: cannot open shared object file');
    expect(runtimeLoadMessage(broken)).toContain(
      'could not be loaded (libonnxruntime.so.1: cannot open shared object file)',
    );
  });
});

describe('assay init suite names', () => {
  it('come from the folder name, made a valid suite name', () => {
    expect(suiteNameFor('my-eval')).toBe('my-eval');
    expect(suiteNameFor('/tmp/x/Support Replies (v2)')).toBe('Support-Replies-v2-');
    expect(suiteNameFor(`/tmp/${'a'.repeat(300)}`)).toBe('a'.repeat(100));
    expect(suiteNameFor('/tmp/x/..hidden')).toBe('hidden');
    expect(suiteNameFor('/tmp/x/___')).toBe('my-eval');
  });
});
