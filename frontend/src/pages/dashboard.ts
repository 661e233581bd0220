// A course's live dashboard (/courses/<id>/dashboard, instructors): the header, and the
// dashboard (src/dashboard/) on the course the page names.
import "../style.css";
import "../courses.css";

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
