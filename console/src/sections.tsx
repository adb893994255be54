/**
 * The console's sections: one row each, read by the navigation and the router (app.tsx). A section is
 * offered in the navigation only when `readable` says the caller's role may read it (GET /api/v3/caller);
 * reached by URL without permission, its page shows the API's refusal. Heavy pages are loaded only when
 * opened (`lazyPage`), so the first visit downloads the navigation, the overview and the things table.
 */
import type { ComponentType } from 'preact';
import { NotificationActionsPage } from './actions/notification-actions-page.tsx';
import { AlertsPage } from './alerts/alerts-page.tsx';
import { ApiKeysPage } from './api-keys/api-keys-page.tsx';
import { AuditPage } from './audit/audit-page.tsx';
import { allows, type Caller } from './caller.ts';
import { lazyPage } from './components/lazy-page.tsx';
import { GatewaysPage } from './gateways/gateways-page.tsx';
import { GroupsPage } from './groups/groups-page.tsx';
import { OrganisationsPage } from './organisations/organisations-page.tsx';
import { OverviewPage } from './overview/overview-page.tsx';
import { RolesPage } from './roles/roles-page.tsx';
import { readSegment } from './router.tsx';
import { SettingsPage } from './settings/settings-page.tsx';
import { TemplatesPage } from './templates/templates-page.tsx';
import { ThingsPage } from './things/things-page.tsx';
import { UsersPage } from './users/users-page.tsx';

export const GROUPS = ['Fleet', 'Monitoring', 'Automation', 'Access', 'Settings'] as const;
export type SectionGroup = (typeof GROUPS)[number];

/** What a section's page is given: the rest of the path after the section (`boiler-1` of `things/boiler-1`). */
export interface SectionProps {
  rest: string | undefined;
  /** Shown without the navigation and header (a wall screen): set where the section's `fullScreen` says so. */
  fullScreen?: boolean;
}

export interface Section {
  /** The first segment of the page's path under /console/. */
  path: string;
  /** The navigation link's name and the tab's title. */
  label: string;
  group: SectionGroup;
  readable: (caller: Caller) => boolean;
  page: ComponentType<SectionProps>;
  /** A page reached from others (a guide), not listed in the navigation. */
  unlisted?: true;
  /** Whether the page at these path segments (after the section's) is shown full screen. */
  fullScreen?: (rest: string[]) => boolean;
}

const reads =
  (cls: string) =>
  (caller: Caller): boolean =>
    allows(caller, cls, 'read');

const ThingPage = lazyPage(() => import('./things/thing-page.tsx').then((m) => m.ThingPage));
const ConnectPage = lazyPage(() => import('./connect/connect-page.tsx').then((m) => m.ConnectPage));
const RulesPage = lazyPage(() => import('./rules/rules-page.tsx').then((m) => m.RulesPage));
const DashboardsPage = lazyPage(() => import('./dashboards/dashboards-page.tsx').then((m) => m.DashboardsPage));
const KeyPairsPage = lazyPage(() => import('./key-pairs/key-pairs-page.tsx').then((m) => m.KeyPairsPage));

export const SECTIONS: readonly Section[] = [
  { path: 'overview', label: 'Overview', group: 'Fleet', readable: reads('thing'), page: OverviewPage },
  {
    path: 'dashboards',
    label: 'Dashboards',
    group: 'Fleet',
    readable: reads('dashboard'),
    page: DashboardsPage,
    fullScreen: (rest) => rest[1] === 'full',
  },
  {
    path: 'things',
    label: 'Things',
    group: 'Fleet',
    readable: reads('thing'),
    page: ({ rest }) => (rest ? <ThingPage thingKey={readSegment(rest)} /> : <ThingsPage />),
  },
  { path: 'templates', label: 'Templates', group: 'Fleet', readable: reads('thing_template'), page: TemplatesPage },
  { path: 'groups', label: 'Groups', group: 'Fleet', readable: reads('group'), page: GroupsPage },
  { path: 'gateways', label: 'Gateways', group: 'Fleet', readable: reads('gateway'), page: GatewaysPage },
  { path: 'alerts', label: 'Alerts', group: 'Monitoring', readable: reads('alert'), page: AlertsPage },
  { path: 'audit-trail', label: 'Audit trail', group: 'Monitoring', readable: reads('audit_trail'), page: AuditPage },
  { path: 'rules', label: 'Rules', group: 'Automation', readable: reads('rule'), page: () => <RulesPage /> },
  {
    path: 'notification-actions',
    label: 'Notification actions',
    group: 'Automation',
    readable: reads('notification_action'),
    page: NotificationActionsPage,
  },
  { path: 'key-pairs', label: 'Key pairs', group: 'Access', readable: reads('key_pair'), page: () => <KeyPairsPage /> },
  { path: 'api-keys', label: 'API keys', group: 'Access', readable: reads('api_key'), page: ApiKeysPage },
  { path: 'users', label: 'Users', group: 'Access', readable: reads('user'), page: UsersPage },
  { path: 'roles', label: 'Roles', group: 'Access', readable: reads('role'), page: RolesPage },
  {
    path: 'organisations',
    label: 'Organisations',
    group: 'Access',
    // Child organisations are their OEM parent's account admins' to manage (docs/api.md, "Organisations").
    readable: (caller) => caller.account_admin && caller.is_oem,
    page: OrganisationsPage,
  },
  {
    path: 'settings',
    label: 'Settings',
    group: 'Settings',
    // Usage needs thing read; retention is the account admin's.
    readable: (caller) => caller.account_admin || allows(caller, 'thing', 'read'),
    page: SettingsPage,
  },
  {
    path: 'connect',
    label: 'Connect a device',
    group: 'Fleet',
    readable: reads('key_pair'),
    page: () => <ConnectPage />,
    unlisted: true,
  },
];

/** The page `/console/` itself shows. */
export const HOME = 'overview';
