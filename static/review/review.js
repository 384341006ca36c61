// Small enhancements of the review queue; every action also works without JavaScript.
(function () {
  const form = document.getElementById("bulk-form");
  if (!form) return;
  const all = document.getElementById("select-all");
  const boxes = Array.from(form.querySelectorAll(".row-select"));
  const counter = document.getElementById("selected-count");

  function refresh() {
    const picked = boxes.filter((b) => b.checked).length;
    counter.textContent = picked + " selected";
    all.checked = picked === boxes.length && picked > 0;
    all.indeterminate = picked > 0 && picked < boxes.length;
    boxes.forEach((b) => b.closest(".candidate").classList.toggle("selected", b.checked));
  }
  all.addEventListener("change", () => { boxes.forEach((b) => { b.checked = all.checked; }); refresh(); });
  boxes.forEach((b) => b.addEventListener("change", refresh));

  // Keyboard: a approves, r rejects the selection; x toggles select-all.
  document.addEventListener("keydown", (event) => {
    if (event.target.matches("input[type=text], textarea, select") || event.ctrlKey || event.metaKey || event.altKey) return;
    const act = { a: "approve", r: "reject" }[event.key];
    if (act && boxes.some((b) => b.checked)) {
      form.querySelector(`button[value=${act}]`).click();
    } else if (event.key === "x") {
      all.click();
    }
  });
  refresh();
})();
