/**
 * Import rules checked by `npm run lint` (dependency-cruiser). Type-only imports count: a cycle of
 * types is a cycle of modules all the same.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Modules of src/ import one another one way only: no import leads back to where it started.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'repository-not-http',
      comment: 'Repositories read and write the store; they know nothing of HTTP (src/core/http/).',
      severity: 'error',
      from: { path: '^src/.+/repository\\.ts$' },
      to: { path: '^src/core/http/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
