// Loaded with --import by a local cloud container started from the TypeScript sources (see
// containers.ts): registers tsx in the container's thread, so that its entry and the function
// it loads can be TypeScript.
import { register } from 'tsx/esm/api';

register();
