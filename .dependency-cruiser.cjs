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
      name: 'routes-call-services',
      comment:
        'Routes call services only: a routes.ts parses the call, calls a service and presents what it answers; ' +
        "it imports no repository, its own or another capability's.",
      severity: 'error',
      from: { path: '^src/[^/]+/routes\\.ts$' },
      to: { path: 'repository\\.ts$' },
    },
    {
      name: 'own-repository-only',
      comment:
        'Another capability is reached through its service, never its repository: a file in src/X/ imports only ' +
        'repositories of src/X/. Type-only imports count: row types come from the owning presenter.ts or service.ts.',
      severity: 'error',
      from: { path: '^src/([^/]+)/' },
      to: { path: '^src/[^/]+/[^/]*repository\\.ts$', pathNot: '^src/$1/' },
    },
    {
      name: 'app-not-repositories',
      comment:
        'The files directly in src/ (the app, the command line, bootstrap, start-up) reach capabilities through ' +
        'their services too.',
      severity: 'error',
      from: { path: '^src/[^/]+\\.ts$' },
      to: { path: '^src/[^/]+/[^/]*repository\\.ts$' },
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
