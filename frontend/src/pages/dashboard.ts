// A course's live dashboard (/courses/<id>/dashboard, instructors): the header, and the
// dashboard (src/dashboard/) on the course the page names.

// The stylesheets of what the page shows, in cascade order (frontend/README.md, Styles).
import "../styles/base.css";
import "../styles/controls.css";
import "../styles/header.css";
import "../styles/dialogs.css";
import "../panes/output.css";
import "../course-page.css";
import "../dashboard/dashboard.css";
import "../dashboard/cell-detail.css";

import { Dashboard, type DashboardData } from "../dashboard/dashboard";
import { pageData } from "../dom";
import { bindHeader } from "../header";

function main(): void {
  bindHeader();
  const data = pageData<DashboardData>("dashboard-data");
  if (!data) return;
  const dashboard = new Dashboard(data);
  Object.assign(window, { dashboard });
}

main();
