// Small enhancements of the review queue; every action also works without JavaScript.
(function () {
  const form = document.getElementById("bulk-form");
  if (!form) return;
  const all = document.getElementById("select-all");
  const boxes = Array.from(form.querySelectorAll(".row-select"));
  const cards = Array.from(form.querySelectorAll("li.candidate"));
  const counter = document.getElementById("selected-count");
  let current = -1;

  function refresh() {
    const picked = boxes.filter((b) => b.checked).length;
    counter.textContent = picked + " selected";
    all.checked = picked === boxes.length && picked > 0;
    all.indeterminate = picked > 0 && picked < boxes.length;
    boxes.forEach((b) => b.closest(".candidate").classList.toggle("selected", b.checked));
  }

  // The current card: the one j/k moved to (or last clicked); a, r, s and e act on it.
  function setCurrent(index, scroll) {
    if (!cards.length) return;
    current = Math.max(0, Math.min(cards.length - 1, index));
    cards.forEach((card, i) => card.classList.toggle("current", i === current));
    if (scroll) {
      cards[current].focus({ preventScroll: true });
      cards[current].scrollIntoView({ block: "nearest" });
    }
  }

  all.addEventListener("change", () => { boxes.forEach((b) => { b.checked = all.checked; }); refresh(); });
  boxes.forEach((b) => b.addEventListener("change", refresh));
  cards.forEach((card, i) => card.addEventListener("click", () => setCurrent(i, false)));

  // Keyboard: j/k move, a approves and r rejects the selection (else the current card),
  // s selects the current card, x toggles select-all, e edits the current card.
  document.addEventListener("keydown", (event) => {
    if (event.target.matches("input[type=text], textarea, select") || event.ctrlKey || event.metaKey || event.altKey) return;
    const act = { a: "approve", r: "reject" }[event.key];
    const card = current >= 0 ? cards[current] : null;
    if (act) {
      if (boxes.some((b) => b.checked)) {
        form.querySelector(`button[data-bulk=${act}]`).click();
      } else if (card) {
        card.querySelector(`.actions button[value=${act}]`).click();
      }
    } else if (event.key === "x") {
      all.click();
    } else if (event.key === "j") {
      setCurrent(current + 1, true);
    } else if (event.key === "k") {
      setCurrent(current < 0 ? 0 : current - 1, true);
    } else if (event.key === "s" && card) {
      event.preventDefault();
      card.querySelector(".row-select").click();
    } else if (event.key === "e" && card) {
      card.querySelector("a.edit").click();
    }
  });
  refresh();
})();
