// A code block or cell output wider than the page scrolls, and a keyboard reader scrolls it once
// it has focus: pydata-sphinx-theme gives each such block a tab stop (tabIndex 0) when the page
// loads, when the window resizes and when nodes are added, but a dropdown (a solution, a hidden
// cell) only changes a class when it opens, so the blocks it reveals stay out of reach. This gives
// them their tab stop as soon as they show, by the theme's own rule (scrollable: overflowing).
"use strict";

// The blocks the theme looks at that this book has: code, myst-nb outputs, tables.
const SCROLLABLE_BLOCKS = "pre, .cell_output > .output, .pst-scrollable-table-container";

function addTabStops(root) {
  root.querySelectorAll(SCROLLABLE_BLOCKS).forEach((block) => {
    if (block.scrollWidth > block.clientWidth || block.scrollHeight > block.clientHeight) {
      block.tabIndex = 0;
    }
  });
}

// sphinx-togglebutton opens an admonition on a click on its title (listened for on the title,
// so this document-level listener runs after it); a <details> dropdown fires "toggle".
document.addEventListener("click", (event) => {
  const title = event.target.closest(".toggle > .admonition-title");
  if (title) {
    addTabStops(title.parentElement);
  }
});
document.addEventListener("toggle", (event) => {
  if (event.target.open) {
    addTabStops(event.target);
  }
}, true);
