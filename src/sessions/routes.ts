import { type AnyRoute, defineRoute } from '../core/http/route.ts';
import { presentCaller } from './presenter.ts';
import {
  CallerAnswer,
  CallerParams,
  IdentityProviderSignInParams,
  Session,
  SignInParams,
  SignOutAnswer,
  SignOutParams,
} from './schemas.ts';
import type { SessionService } from './service.ts';

const tags = ['Sessions'];

export function sessionRoutes(sessions: SessionService): AnyRoute[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/api_sign_in',
      tags,
      summary: 'Sign in with e-mail address and password',
      description:
        'Answers 429 with Retry-After after 10 failures for one address (or 50 from one client) in 15 minutes.',
      access: { kind: 'public' },
      params: SignInParams,
      response: Session,
      handler: ({ params, request }) =>
        sessions.signIn({
          email: params.email,
          password: params.password,
          organisationKey: params.organisation_key,
          clientAddress: request.ip,
        }),
    }),
    defineRoute({
      method: 'POST',
      url: '/azure_api_sign_in',
      tags,
      summary: 'Sign in through an external identity provider',
      description:
        'A resource-owner password grant at the provider named by mode; its ID token is verified against its JWKS.',
      access: { kind: 'public' },
      params: IdentityProviderSignInParams,
      response: Session,
      handler: ({ params, request }) =>
        sessions.signInWithIdentityProvider({
          clientId: params.client_id,
          code: params.code,
          // The schema's default fills it in.
          mode: params.mode as string,
          clientAddress: request.ip,
        }),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/caller',
      tags,
      summary: 'Who the caller is and what its role allows',
      description:
        'For a session or an API key: its user, role, organisation, and per permission class the operations ' +
        'the role grants, so that a client offers only what will be allowed.',
      access: { kind: 'signed_in' },
      params: CallerParams,
      response: CallerAnswer,
      handler: ({ principal }) => presentCaller(principal),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api_sign_out',
      tags,
      summary: 'Sign out: the token stops working',
      description:
        'Ends a session. An API key is not signed out (400): it is revoked by deleting it (DELETE /api/v3/api_keys/{api_key_key}).',
      access: { kind: 'signed_in' },
      unlimited: true,
      params: SignOutParams,
      response: SignOutAnswer,
      handler: async ({ request }) => {
        await sessions.signOut(String(request.headers['x-auth-token']));
        return { success: true, message: 'Signed out successfully' };
      },
    }),
  ];
}
