// graphmem ui: pick the answer's point on a key's plot, by a click or by dragging the
// point. While the pointer is down the point follows it and the form's cutoff and
// known_at show the times of the cell under it (the server lists them on the plot, one
// per column and row); on release the form asks the server again, and the address keeps
// both times, so the view can be shared.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const plot = document.getElementById("plot");
  const form = document.getElementById("pick");
  if (!plot || !form) return;
  const d = plot.dataset;
  const xs = JSON.parse(d.x), ys = JSON.parse(d.y);
  const width = Number(d.width), height = Number(d.height);
  const point = plot.querySelector(".point");
  const cell = (offset, size, count) => Math.min(count - 1, Math.max(0, Math.floor(offset / size)));
  let dragging = false;

  // The plot coordinates of a pointer event, or null outside the plot's area.
  const at = (event) => {
    const box = plot.getBoundingClientRect();
    const scale = box.width / plot.viewBox.baseVal.width;
    const px = (event.clientX - box.left) / scale - Number(d.left);
    const py = (event.clientY - box.top) / scale - Number(d.top);
    return px < 0 || py < 0 || px > width || py > height ? null : [px, py];
  };
  const pick = ([px, py]) => {
    form.elements.cutoff.value = xs[cell(px, Number(d.col), xs.length)];
    form.elements.known_at.value = ys[cell(height - py, Number(d.row), ys.length)];
    if (point) { point.setAttribute("cx", px); point.setAttribute("cy", py); }
  };
  plot.addEventListener("pointerdown", (event) => {
    const p = at(event);
    if (!p) return;
    dragging = true;
    plot.setPointerCapture(event.pointerId);
    pick(p);
  });
  plot.addEventListener("pointermove", (event) => {
    const p = dragging && at(event);
    if (p) pick(p);
  });
  plot.addEventListener("pointerup", () => {
    if (!dragging) return;
    dragging = false;
    form.submit();
  });
  plot.addEventListener("pointercancel", () => { dragging = false; });
});
