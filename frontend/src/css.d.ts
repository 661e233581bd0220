// Stylesheets are bundled by esbuild: each page's entry imports those of what it shows, and they
// become its bundle's .css (app.css, assignment.css, courses.css, dashboard.css), in import order.
declare module "*.css";
